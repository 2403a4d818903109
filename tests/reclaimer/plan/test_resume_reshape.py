"""Resume and reshape rules: when a suspended job comes back, how a node's replicas move."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

import pytest
from planworld import HOUR, World, starved_world

from reclaimer.decisions import ActionKind, Reason
from reclaimer.policy.settings import Limits, Policy, TimeSlicing, WorkloadClass

Case = Callable[[], World]


RESUME_CASES = [
    pytest.param(
        lambda: starved_world().suspended("be/s", "be", 8).acted("be/s", 2 * HOUR),
        Policy(),
        ["be/s"],
        {},
        id="room-again-resumes",
    ),
    pytest.param(
        lambda: starved_world().suspended("be/s", "be", 8).acted("be/s", 600),
        Policy(),
        [],
        {"be/s": Reason.COOLING_DOWN},
        id="not-within-job-cooldown",
    ),
    pytest.param(
        lambda: (
            starved_world()
            .job("be/a", "be", {"n1": 8}, busy=True)
            .job("be/b", "be", {"n2": 4}, busy=True)
            .suspended("be/s", "be", 8)
        ),
        Policy(),
        [],
        {"be/s": Reason.NO_FIT},
        id="does-not-fit-free-slots",
    ),
    pytest.param(
        lambda: (
            starved_world()
            .job("be/a", "be", {"n1": 4, "n2": 4}, busy=True)
            .suspended("be/s", "be", 8, pods=2)
        ),
        Policy(),
        ["be/s"],
        {},
        id="gang-fits-across-nodes",
    ),
    pytest.param(
        lambda: (
            starved_world()
            .job("be/a", "be", {"n1": 8}, busy=True)
            .suspended("be/s", "be", 4)
            .pend("ls/x", "ls", 16, pods=2)
        ),
        Policy(),
        [],
        {"be/s": Reason.DEMAND_WAITING, "ls/x": Reason.NO_FIT},
        id="starved-demand-still-waiting",
    ),
    pytest.param(
        lambda: (
            starved_world()
            .job("be/a", "be", {"n1": 8}, busy=True)
            .suspended("be/s", "be", 4)
            .pend("ls/huge", "ls", 64)
        ),
        Policy(),
        ["be/s"],
        {"ls/huge": Reason.NO_FIT},
        id="demand-too-big-for-the-cluster-does-not-block",
    ),
    pytest.param(
        lambda: (
            starved_world()
            .job("be/a", "be", {"n1": 8}, busy=True)
            .suspended("be/s", "be", 8)
            .pend("ls/x", "ls", 8)
        ),
        Policy(),
        [],
        {"ls/x": Reason.FITS_FREE, "be/s": Reason.NO_FIT},
        id="pending-job-takes-the-free-slots-first",
    ),
    pytest.param(
        lambda: (
            starved_world()
            .suspended("be/new", "be", 8)
            .acted("be/new", 2 * HOUR)
            .suspended("be/old", "be", 8)
            .acted("be/old", 5 * HOUR)
            .suspended("be/older", "be", 8)
            .acted("be/older", 9 * HOUR)
        ),
        Policy(limits=Limits(max_resumes_per_cycle=1)),
        ["be/older"],
        {"be/old": Reason.LIMIT_REACHED, "be/new": Reason.LIMIT_REACHED},
        id="oldest-first-within-limit",
    ),
    pytest.param(
        lambda: (
            World()
            .node("n1")
            .queue("be", capability_gpus=4.0)
            .suspended("be/s", "be", 8)
            .acted("be/s", 2 * HOUR)
        ),
        Policy(),
        [],
        {"be/s": Reason.QUEUE_AT_CAPABILITY},
        id="queue-capability",
    ),
]


@pytest.mark.parametrize(("build", "policy", "resumed", "skips"), RESUME_CASES)
def test_resume(build: Case, policy: Policy, resumed: list[str], skips: dict[str, Reason]) -> None:
    plan = build().plan(policy)
    assert [a.target for a in plan.actions if a.kind is ActionKind.RESUME] == resumed
    assert all(a.reason is Reason.QUEUE_HAS_ROOM for a in plan.actions)
    got = {s.target: s.reason for s in plan.skipped}
    assert {t: got.get(t) for t in skips} == skips


CLASSES = TimeSlicing(
    max_replicas=8,
    workloads=(
        WorkloadClass("inference", gpu_share=0.25, overcommit=1.5, max_memory=0.8),
        WorkloadClass("notebook", gpu_share=0.5, overcommit=2.0, max_memory=0.7),
        WorkloadClass("training", gpu_share=1.0, share_memory=False, max_memory=0.95),
    ),
)


def _node(replicas: int, *usage: tuple[float, float], **kw: object) -> World:
    return World().node("n1", gpus=2, replicas=replicas, **kw).stats("n1", *usage)


RESHAPE_CASES = [
    pytest.param(
        _node(4, (0.1, 0.2), (0.2, 0.2)),
        (4, 8),
        Reason.NODE_UNDERUSED,
        id="underused-raises-to-max",
    ),
    pytest.param(
        _node(4, (0.3, 0.3), (0.4, 0.3)),
        (4, 7),
        Reason.NODE_UNDERUSED,
        id="underused-raise-bounded-by-band",
    ),
    pytest.param(  # fill rule: 7 (50% x 7/4 < 90%); headroom: 14.4 - 8 GiB holds 6 pods of 1 GiB
        _node(4, (0.1, 0.5), (0.1, 0.5)),
        (4, 6),
        Reason.NODE_UNDERUSED,
        id="raise-bounded-by-memory",
    ),
    pytest.param(
        _node(4, (0.95, 0.3), (0.9, 0.3)),
        (4, 3),
        Reason.NODE_SATURATED,
        id="saturated-lowers-one",
    ),
    pytest.param(
        _node(6, (0.5, 0.95), (0.5, 0.3)),
        (6, 5),
        Reason.NODE_MEMORY_PRESSURE,
        id="memory-pressure-lowers",
    ),
    pytest.param(
        _node(8, (0.5, 0.99), (0.5, 0.3)),
        (8, 7),
        Reason.NODE_MEMORY_PRESSURE,
        id="memory-lowers-until-projected-fits",
    ),
    pytest.param(
        _node(4, (0.5, 0.3), (0.6, 0.3), workload_classes=("inference",)),
        None,
        Reason.NO_CHANGE,
        id="in-band-no-change",
    ),
    pytest.param(
        _node(8, (0.5, 0.3), workload_classes=("inference",)),
        (8, 6),
        Reason.CLASS_LIMIT,
        id="class-ceiling-lowers",
    ),
    pytest.param(
        _node(4, (0.1, 0.2), workload_classes=("inference", "training")),
        (4, 2),
        Reason.CLASS_LIMIT,
        id="most-restrictive-class-wins",
    ),
    pytest.param(
        _node(3, (0.1, 0.2), workload_classes=("training",)),
        (3, 2),
        Reason.CLASS_LIMIT,
        id="whole-gpu-class-floors-at-2",
    ),
    pytest.param(
        _node(2, (0.99, 0.3)),
        None,
        Reason.NO_CHANGE,
        id="never-below-2",
    ),
    pytest.param(
        _node(4, (0.1, 0.75), workload_classes=("notebook",)),
        (4, 3),
        Reason.NODE_MEMORY_PRESSURE,
        id="class-memory-limit",
    ),
    pytest.param(
        _node(4, (0.1, 0.2), last_reshape=1_000_000.0 - 600),
        None,
        Reason.COOLING_DOWN,
        id="node-cooldown",
    ),
    pytest.param(
        _node(4),
        None,
        Reason.NO_METRICS,
        id="no-stats",
    ),
    pytest.param(
        _node(4, (0.1, 0.2)),
        None,
        Reason.NO_METRICS,
        id="never-raise-with-an-unreadable-gpu",
    ),
    pytest.param(
        _node(4, (0.1, 0.2), (0.2, 0.2), reshape_key_at=1_000_000.0 - 30),
        None,
        Reason.CONFIG_PROJECTING,
        id="key-written-wait-for-projection",
    ),
    pytest.param(
        _node(4, (0.1, 0.2), (0.2, 0.2), reshape_key_at=1_000_000.0 - 90),
        (4, 8),
        Reason.NODE_UNDERUSED,
        id="key-projected-relabel-next",
    ),
    pytest.param(
        _node(4, (0.95, 0.3)),
        (4, 3),
        Reason.NODE_SATURATED,
        id="lowering-needs-only-the-gpus-seen",
    ),
]


@pytest.mark.parametrize(("world", "change", "reason"), RESHAPE_CASES)
def test_reshape(world: World, change: tuple[int, int] | None, reason: Reason) -> None:
    """Node n1: 2 GPUs; default band (underused <= 40%, saturated >= 90%); CLASSES' ceilings."""
    ts = CLASSES
    plan = world.plan(Policy(time_slicing=ts))
    if change is None:
        assert plan.actions == ()
        assert {s.target: s.reason for s in plan.skipped}["n1"] is reason
    else:
        (action,) = plan.actions
        assert (action.kind, action.target, action.reason) == (ActionKind.RESHAPE, "n1", reason)
        assert (action.from_replicas, action.to_replicas) == change
        assert 2 <= action.to_replicas <= ts.max_replicas


def test_pods_matched_to_class_by_label() -> None:
    world = (
        World()
        .node("n1", gpus=1, replicas=8)
        .stats("n1", (0.5, 0.3))
        .queue("be")
        .job("be/inf", "be", {"n1": 1}, pod_labels={"gpu-reclaim.io/workload-class": "inference"})
    )
    (action,) = world.plan(Policy(time_slicing=CLASSES)).actions
    assert (action.reason, action.to_replicas) == (Reason.CLASS_LIMIT, 6)


def test_whole_gpu_nodes_and_cooldown_from_last_actions() -> None:
    world = (
        World()
        .node("whole", gpus=8)
        .stats("whole", (0.0, 0.0))
        .node("shared", gpus=8, replicas=4)
        .stats("shared", (0.0, 0.0))
        .acted("shared", 60)
    )
    plan = world.plan(Policy(time_slicing=CLASSES))
    assert plan.actions == ()
    assert [(s.target, s.reason) for s in plan.skipped] == [("shared", Reason.COOLING_DOWN)]


def test_reshape_limit_per_cycle() -> None:
    world = World()
    for i in range(5):
        world.node(f"n{i}", gpus=1, replicas=2).stats(f"n{i}", (0.05, 0.1))
    policy = Policy(time_slicing=CLASSES, limits=replace(Limits(), max_reshapes_per_cycle=3))
    plan = world.plan(policy)
    assert [a.target for a in plan.actions] == ["n0", "n1", "n2"]
    assert {s.target: s.reason for s in plan.skipped} == {
        "n3": Reason.LIMIT_REACHED,
        "n4": Reason.LIMIT_REACHED,
    }
