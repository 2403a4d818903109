"""MIG in the planner: capacity and demand per device resource, one world per rule.

An idle MIG pod is taken only for a pending pod asking for the same profile on a node that
offers it; whole GPUs and other profiles are other resources. Reshape leaves MIG nodes alone.
"""

from __future__ import annotations

from collections.abc import Callable

import pytest
from planworld import World

from reclaimer.model import ActionKind, Reason
from reclaimer.policy.settings import Policy, TimeSlicing

SMALL = "nvidia.com/mig-1g.10gb"
BIG = "nvidia.com/mig-3g.40gb"
GPU = "nvidia.com/gpu"


def mig_world() -> World:
    """n1: one MIG GPU (2 small and 1 big instance offered, all held); n2: 2 whole GPUs, held."""
    return (
        World()
        .node("n1", gpus=1, mig={SMALL: 2, BIG: 1})
        .node("n2", gpus=2)
        .queue("be", deserved_gpus=1.0)
        .queue("ls", deserved_gpus=4.0, reclaimable=False)
        .job("be/small-a", "be", {"n1": 1}, idle=0.99, profile=SMALL, kind="Pod")
        .job("be/small-b", "be", {"n1": 1}, busy=True, profile=SMALL, kind="Pod")
        .job("be/big", "be", {"n1": 1}, busy=True, profile=BIG, kind="Pod")
        .job("be/whole", "be", {"n2": 2}, busy=True)
    )


Case = Callable[[], World]

CASES = [
    pytest.param(
        lambda: mig_world().pend("ls/x", "ls", 1, mig={SMALL: 1}),
        {"be/small-a"},
        {"be/small-b": Reason.NOT_IDLE},
        id="same-profile-takes-the-idle-instance",
    ),
    pytest.param(
        lambda: mig_world().pend("ls/x", "ls", 1, mig={BIG: 1}),
        set(),
        {"ls/x": Reason.NO_FIT, "be/small-a": Reason.NO_DEMAND},
        id="other-profile-takes-nothing",
    ),
    pytest.param(
        lambda: mig_world().pend("ls/x", "ls", 1),
        set(),
        {"ls/x": Reason.NO_FIT, "be/small-a": Reason.NO_DEMAND},
        id="whole-gpu-takes-no-instance",
    ),
    pytest.param(
        lambda: mig_world().pend("ls/x", "ls", 1, mig={"nvidia.com/mig-7g.80gb": 1}),
        set(),
        {"ls/x": Reason.NO_FIT},
        id="profile-no-node-offers",
    ),
    pytest.param(
        lambda: mig_world().pend("ls/x", "ls", 2, pods=2, mig={SMALL: 2}),
        set(),
        {"ls/x": Reason.NO_FIT},
        id="gang-of-two-instances-needs-both-free",
    ),
    pytest.param(
        lambda: (
            mig_world()
            .node("n3", gpus=1, mig={SMALL: 7})
            .job("be/small-c", "be", {"n3": 7}, idle=0.98, profile=SMALL, kind="Pod")
            .pend("ls/x", "ls", 2, pods=2, mig={SMALL: 2})
        ),
        {"be/small-c"},
        {},
        id="gang-fits-on-the-node-with-room-per-resource",
    ),
    pytest.param(
        lambda: mig_world().pend("ls/x", "ls", 2, mig={SMALL: 1}),
        set(),
        {"ls/x": Reason.NO_FIT, "be/small-a": Reason.NO_DEMAND},
        id="mixed-gpu-and-mig-demand-gets-no-room",
    ),
    pytest.param(
        lambda: (
            mig_world().node("n4", gpus=1, mig={SMALL: 1}).pend("ls/x", "ls", 1, mig={SMALL: 1})
        ),
        set(),
        {"ls/x": Reason.FITS_FREE, "be/small-a": Reason.NO_DEMAND},
        id="free-instance-of-the-profile-needs-no-preemption",
    ),
]


@pytest.mark.parametrize(("build", "preempted", "skips"), CASES)
def test_mig_preemption(build: Case, preempted: set[str], skips: dict[str, Reason]) -> None:
    world = build()
    plan = world.plan(Policy())
    assert {a.target for a in plan.actions if a.kind is ActionKind.PREEMPT} == preempted
    got = {s.target: s.reason for s in plan.skipped}
    assert {t: got.get(t) for t in skips} == skips


def test_mig_evidence_names_instances_not_gpus() -> None:
    plan = mig_world().pend("ls/x", "ls", 1, mig={SMALL: 1}).plan(Policy())
    (action,) = [a for a in plan.actions if a.kind is ActionKind.PREEMPT]
    assert f"frees 1 MIG instance ({SMALL}) (n1:1)" in action.evidence.detail
    assert "GPUs" not in action.evidence.detail


def test_mixed_demand_says_why() -> None:
    plan = mig_world().pend("ls/x", "ls", 2, mig={SMALL: 1}).plan(Policy())
    (skip,) = [s for s in plan.skipped if s.target == "ls/x"]
    assert skip.detail == f"asks for {GPU} and {SMALL}: room is made for one device resource"


def test_resume_checks_the_jobs_own_profile() -> None:
    """A suspended MIG job resumes only when its profile has room; free whole GPUs do not do."""
    world = (
        World()
        .node("n1", gpus=1, mig={SMALL: 1})
        .node("n2", gpus=2)
        .queue("be")
        .job("be/holder", "be", {"n1": 1}, busy=True, profile=SMALL, kind="Pod")
        .suspended("be/mig", "be", 1, mig={SMALL: 1})
    )
    skip = {s.target: s for s in world.plan(Policy()).skipped}["be/mig"]
    assert skip.reason is Reason.NO_FIT
    assert skip.detail == f"1x1 MIG instance ({SMALL}) do not fit free slots"
    world.pods = []
    assert [a.target for a in world.plan(Policy()).actions] == ["be/mig"]


def test_reshape_leaves_mig_nodes_alone() -> None:
    world = (
        World()
        .node("n1", gpus=1, replicas=4, mig={GPU: 28})
        .node("n2", gpus=1, replicas=4)
        .stats("n1", (0.01, 0.1))
        .stats("n2", (0.01, 0.1))
    )
    plan = world.plan(Policy(time_slicing=TimeSlicing(max_replicas=8)))
    assert [a.target for a in plan.actions] == ["n2"]
    skip = {s.target: s for s in plan.skipped}["n1"]
    assert skip.reason is Reason.MIG_ENABLED
    assert skip.detail == f"MIG-enabled ({GPU}: 28): reshape leaves MIG GPUs alone"
