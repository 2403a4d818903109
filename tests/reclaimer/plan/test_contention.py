"""Contention relief in plan(): busy reclaimable jobs time-sliced with busy guaranteed ones."""

from __future__ import annotations

from dataclasses import replace

import pytest

from reclaimer.decisions import ActionKind, Reason
from reclaimer.policy.settings import Actions, Limits, Policy
from tests.reclaimer.planworld import World

GPU = "GPU-aaaa"


def _shared(be_busy: float | None, ls_busy: float | None, gpu_of_be: str = GPU) -> World:
    """A 1-GPU node at 2 replicas: guaranteed `ls/train` and reclaimable `be/tune` on it."""
    return (
        World()
        .node("n1", gpus=1, replicas=2)
        .stats("n1", (0.9, 0.5))
        .queue("be")
        .queue("ls", reclaimable=False)
        .job("ls/train", "ls", {"n1": 1}, busy=True)
        .job("be/tune", "be", {"n1": 1}, busy=True)
        .usage("ls/train-0", "n1", GPU, ls_busy)
        .usage("be/tune-0", "n1", gpu_of_be, be_busy)
    )


def _stops(world: World, policy: Policy | None = None) -> list[tuple[str, Reason]]:
    plan = world.plan(policy)
    return [(a.target, a.reason) for a in plan.actions if a.kind is ActionKind.PREEMPT]


@pytest.mark.parametrize(
    ("world", "stops"),
    [
        pytest.param(_shared(0.5, 0.45), [("be/tune", Reason.CONTENTION_RELIEF)], id="both-busy"),
        pytest.param(_shared(0.5, 0.1), [], id="guaranteed-light"),
        pytest.param(_shared(0.1, 0.8), [], id="reclaimable-light"),
        pytest.param(_shared(0.5, None), [], id="guaranteed-unknown-decides-nothing"),
        pytest.param(_shared(None, 0.5), [], id="reclaimable-unknown-decides-nothing"),
        pytest.param(_shared(0.5, 0.5, gpu_of_be="GPU-bbbb"), [], id="different-gpus"),
    ],
)
def test_contention_relief(world: World, stops: list[tuple[str, Reason]]) -> None:
    assert _stops(world) == stops


def test_relief_says_who_it_protects() -> None:
    plan = _shared(0.55, 0.4).plan()
    (action,) = plan.actions
    assert action.evidence.for_queue == "ls"
    assert "ls/train" in action.evidence.detail and GPU in action.evidence.detail
    assert "be/tune" not in {s.target for s in plan.skipped}  # one verdict per job


def test_a_guaranteed_job_is_never_stopped() -> None:
    """Two guaranteed jobs contending: nothing is stopped, whoever is busier."""
    world = (
        World()
        .node("n1", gpus=1, replicas=2)
        .stats("n1", (0.95, 0.5))
        .queue("ls", reclaimable=False)
        .queue("prod", reclaimable=False)
        .job("ls/a", "ls", {"n1": 1}, busy=True)
        .job("prod/b", "prod", {"n1": 1}, busy=True)
        .usage("ls/a-0", "n1", GPU, 0.5)
        .usage("prod/b-0", "n1", GPU, 0.45)
    )
    assert _stops(world) == []


@pytest.mark.parametrize(
    ("extra", "reason"),
    [
        pytest.param({"age": 60.0}, Reason.TOO_YOUNG, id="min-runtime"),
        pytest.param(
            {"annotations": {"gpu-reclaim.io/preemptable": "false"}}, Reason.OPTED_OUT, id="opt-out"
        ),
        pytest.param({"disruption_block": "pdb/x allows 0"}, Reason.DISRUPTION_BUDGET, id="pdb"),
    ],
)
def test_relief_keeps_every_safety_rule(extra: dict[str, object], reason: Reason) -> None:
    world = (
        World()
        .node("n1", gpus=1, replicas=2)
        .stats("n1", (0.9, 0.5))
        .queue("be")
        .queue("ls", reclaimable=False)
        .job("ls/train", "ls", {"n1": 1}, busy=True)
        .job("be/tune", "be", {"n1": 1}, busy=True, **extra)
        .usage("ls/train-0", "n1", GPU, 0.5)
        .usage("be/tune-0", "n1", GPU, 0.5)
    )
    plan = world.plan()
    assert plan.actions == ()
    (skip,) = [s for s in plan.skipped if s.target == "be/tune"]
    assert skip.reason is reason and "time-sliced with guaranteed ls/train" in skip.detail


def test_relief_counts_in_the_cycle_budget() -> None:
    """Two contending jobs, one preemption allowed: the busier one goes, the other is a skip."""
    world = (
        _shared(0.5, 0.4)
        .job("be/other", "be", {"n1": 1}, busy=True)
        .usage("be/other-0", "n1", GPU, 0.35)
    )
    policy = Policy(limits=Limits(max_preemptions_per_cycle=1))
    assert _stops(world, policy) == [("be/tune", Reason.CONTENTION_RELIEF)]
    (skip,) = [s for s in world.plan(policy).skipped if s.target == "be/other"]
    assert skip.reason is Reason.LIMIT_REACHED


def test_relief_is_off_with_preemption() -> None:
    assert _stops(_shared(0.5, 0.5), Policy(actions=Actions(preempt=False))) == []


def _relieved(free_elsewhere: bool) -> World:
    """`be/tune` was stopped for contention relief an hour ago; `ls/train` is still busy on n1,
    whose freed replica is the only room, unless n2 has a free GPU too."""
    world = (
        World()
        .node("n1", gpus=1, replicas=2)
        .stats("n1", (0.6, 0.5))
        .queue("be")
        .queue("ls", reclaimable=False)
        .job("ls/train", "ls", {"n1": 1}, busy=True)
        .usage("ls/train-0", "n1", GPU, 0.6)
        .suspended("be/tune", "be", 1, stop_reason="ContentionRelief")
    )
    world.last_actions["be/tune"] = world.now - 2 * 3600
    return world.node("n2", gpus=1) if free_elsewhere else world


def test_a_relieved_job_is_not_resumed_beside_the_busy_guaranteed_job() -> None:
    plan = _relieved(free_elsewhere=False).plan()
    assert [a for a in plan.actions if a.kind is ActionKind.RESUME] == []
    (skip,) = [s for s in plan.skipped if s.target == "be/tune"]
    assert skip.reason is Reason.CONTENTION_WOULD_RETURN and "(n1)" in skip.detail


def test_a_relieved_job_is_resumed_when_room_is_elsewhere() -> None:
    plan = _relieved(free_elsewhere=True).plan()
    assert [(a.target, a.reason) for a in plan.actions] == [("be/tune", Reason.QUEUE_HAS_ROOM)]


def test_a_job_stopped_for_another_reason_is_resumed_as_before() -> None:
    world = _relieved(free_elsewhere=False)
    world.jobs = [replace(j, stop_reason="IdleJobForStarvedQueue") for j in world.jobs]
    plan = world.plan()
    assert [(a.target, a.reason) for a in plan.actions] == [("be/tune", Reason.QUEUE_HAS_ROOM)]


def test_relief_stops_a_job_sharing_a_dra_claim_with_a_guaranteed_one() -> None:
    """Pods sharing a DRA claim hold no slots of their own (the claim's device is held on the
    node, `Node.claims_held`), yet share its device's time like time-sliced pods."""
    dra = "dra:gpu.nvidia.com"
    world = (
        World()
        .node("n1", gpus=1, dra=True, mig={dra: 1}, claims_held={dra: 1})
        .queue("be")
        .queue("ls", reclaimable=False)
        .job("ls/train", "ls", {"n1": 0}, busy=True)
        .job("be/tune", "be", {"n1": 0}, busy=True)
        .usage("ls/train-0", "n1", GPU, 0.45)
        .usage("be/tune-0", "n1", GPU, 0.5)
    )
    plan = world.plan()
    assert _stops(world) == [("be/tune", Reason.CONTENTION_RELIEF)]
    (action,) = plan.actions
    assert action.evidence.gpus_freed == 0 and "frees 0 slots" in action.evidence.detail
