"""A pending multi-GPU job gets whole GPUs back from the time-sliced pool: a pool node lowered to 1
replica (`reclaimer.plan.handback`), with the job in the evidence."""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from reclaimer.decisions import ActionKind, Reason
from tests.reclaimer.planworld import HOUR, NOW, World


def _fleet(*pool: tuple[str, int, int]) -> World:
    """`whole`: 4 GPUs without time-slicing, all held by the guaranteed `ls/run`; each pool
    entry (name, GPUs, one-replica pods there) a node at 2 replicas; queues `ls` and `be`."""
    world = World().node("whole", gpus=4).queue("ls", deserved_gpus=8.0).queue("be")
    world.job("ls/run", "ls", {"whole": 4})
    for name, gpus, pods in pool:
        world.node(name, gpus=gpus, replicas=2)
        for k in range(pods):
            world.job(f"be/{name}-{k}", "be", {name: 1})
    return world


@dataclass
class Case:
    world: World
    handed: dict[str, str]  # pool node -> the pending job it is lowered to 1 for


CASES = [
    pytest.param(
        Case(_fleet(("pool", 4, 1)).pend("ls/big", "ls", 2), {"pool": "ls/big"}),
        id="a-waiting-2-gpu-pod-gets-a-pool-node",
    ),
    pytest.param(
        Case(_fleet(("pool", 4, 0)).node("spare", gpus=2).pend("ls/big", "ls", 2), {}),
        id="whole-gpus-free-elsewhere-the-scheduler-places-it",
    ),
    pytest.param(
        Case(_fleet(("pool", 4, 0)).pend("ls/pair", "ls", 2, pods=2), {}),
        id="one-gpu-pods-fit-replicas",
    ),
    pytest.param(
        Case(_fleet(("pool", 4, 0)).pend("ls/big", "ls", 2, since=NOW - 120), {}),
        id="waited-less-than-reclaimAfter",
    ),
    pytest.param(
        Case(_fleet(("pool", 4, 3)).pend("ls/big", "ls", 2), {}),
        id="its-gpus-are-held-a-lowering-evicts-none",
    ),
    pytest.param(
        Case(_fleet(("a", 4, 1), ("b", 4, 0)).pend("ls/big", "ls", 2), {"b": "ls/big"}),
        id="the-node-with-fewest-pods",
    ),
    pytest.param(
        Case(
            _fleet(("a", 4, 0), ("b", 4, 0)).pend("ls/gang", "ls", 8, pods=2),
            {"a": "ls/gang", "b": "ls/gang"},
        ),
        id="a-gang-takes-as-many-nodes-as-it-needs",
    ),
    pytest.param(
        Case(_fleet(("a", 4, 0), ("b", 4, 0)).pend("ls/gang", "ls", 12, pods=3), {}),
        id="a-gang-the-pool-cannot-hold-gets-none",
    ),
    pytest.param(
        Case(
            _fleet(("a", 4, 0), ("b", 4, 0)).acted("a", 600).pend("ls/big", "ls", 2),
            {"b": "ls/big"},
        ),
        id="a-node-in-its-cooldown-is-not-offered",
    ),
    pytest.param(
        Case(
            _fleet(("a", 4, 0), ("b", 4, 0))
            .pend("ls/old", "ls", 4, since=NOW - 2 * HOUR)
            .pend("ls/new", "ls", 4),
            {"a": "ls/old", "b": "ls/new"},
        ),
        id="one-node-per-job-oldest-first",
    ),
    pytest.param(
        Case(_fleet(("pool", 4, 0)).pend("ls/mig", "ls", 2, mig={"nvidia.com/mig-1g.10gb": 2}), {}),
        id="mig-demand-is-not-served",
    ),
]


@pytest.mark.parametrize("case", CASES)
def test_a_pool_node_is_handed_back_whole(case: Case) -> None:
    p = case.world.plan()
    handed = {
        a.target: a.evidence.for_pending
        for a in p.actions
        if a.kind is ActionKind.RESHAPE and a.reason is Reason.WHOLE_GPUS_FOR_PENDING
    }
    assert handed == case.handed
    for a in p.actions:
        if a.target in handed:
            assert (a.from_replicas, a.to_replicas) == (2, 1)
            assert a.evidence.for_queue == "ls"
            assert "hold no pod (a lowering evicts none)" in a.evidence.detail


def test_the_evidence_names_the_job_and_what_waits() -> None:
    world = _fleet(("pool", 4, 1)).pend("ls/big", "ls", 2)
    (action,) = [a for a in world.plan().actions if a.target == "pool"]
    assert action.evidence.detail == (
        "2 -> 1 replicas: whole GPUs for pending ls/big (queue ls: 1 pod of 2 GPUs, waiting 1h); "
        "the nodes without time-slicing cannot hold it; 3 of 4 GPUs here hold no pod "
        "(a lowering evicts none)"
    )
