"""The raise gate's memory budget caps the replicas a time-sliced node keeps (`plan.budget`):
a node whose count passes what its smallest GPU holds at the budget is lowered, down to 1, and
unknown peaks leave it alone and say so."""

from __future__ import annotations

from dataclasses import dataclass, field, replace

import pytest

from reclaimer.decisions import ActionKind, Reason
from reclaimer.model import ContainerCrash, GpuStats, MemoryPeaks
from reclaimer.plan.planner import plan
from reclaimer.policy.settings import Policy, TimeSlicing
from tests.reclaimer.planworld import NOW, World, fleet_peaks

GIB = 1024.0**3


def _node(replicas: int = 2, util: float = 0.5, memory: float = 0.3, **kw: object) -> World:
    """n1: one 16 GiB GPU in the load band (no load rule changes it), 30% of its memory used."""
    return World().node("n1", gpus=1, replicas=replicas, **kw).stats("n1", (util, memory))


def _at(gib: float, pods: int = 20) -> MemoryPeaks:
    """The week's peaks: `pods` pods, each peaked at `gib` (so every quantile is `gib`)."""
    return fleet_peaks(*[gib] * pods)


def _gpus(world: World, *gib: float) -> World:
    """n1's GPUs replaced by ones of `gib` GiB each, 30% used, in the load band."""
    stats = tuple(
        GpuStats(0.5, 0.3, f"GPU-n1-{i}", 0.3 * g * GIB, g * GIB) for i, g in enumerate(gib)
    )
    world.nodes = [replace(n, gpus=len(gib), gpu_stats=stats) for n in world.nodes]
    return world


@dataclass
class Case:
    world: World
    peaks: MemoryPeaks | None
    change: tuple[int, int] | None  # (from, to) of n1's reshape, or None: no action on n1
    reason: Reason
    says: tuple[str, ...] = ()  # in the evidence or the skip's detail
    time_slicing: TimeSlicing = field(default_factory=TimeSlicing)
    crashes: tuple[ContainerCrash, ...] = ()

    def verdict(self) -> tuple[Reason, tuple[int | None, int | None] | None, str]:
        self.world.memory_peaks = self.peaks
        snapshot = replace(self.world.snapshot(), crashes=self.crashes)
        p = plan(snapshot, self.world.forecasts, Policy(time_slicing=self.time_slicing), NOW)
        for a in p.actions:
            if a.kind is ActionKind.RESHAPE and a.target == "n1":
                return a.reason, (a.from_replicas, a.to_replicas), a.evidence.detail
        (skip,) = [s for s in p.skipped if s.target == "n1"]
        return skip.reason, None, skip.detail


OOM = (ContainerCrash("ls/a-0", "n1", "main", NOW - 600, "OOMKilled", 137, restarts=3),)
EXCEEDED = Reason.MEMORY_BUDGET_EXCEEDED
CASES = [
    pytest.param(
        Case(
            _node(),
            _at(12),
            (2, 1),
            EXCEEDED,
            (
                "2 -> 1 replicas: each pod may come to hold 12.0 GiB",
                "the 99% memory peak of 20 pods over 7d",
                "GPU GPU-n1-0 has 16.0 GiB",
                "room for 1 pod(s)",
            ),
        ),
        id="12GiB-budget-on-16GiB-gpus-2-to-1",
    ),
    pytest.param(Case(_node(), _at(8), None, Reason.NO_CHANGE), id="8GiB-budget-two-fit-stays-2"),
    pytest.param(Case(_node(3), _at(8), (3, 2), EXCEEDED), id="8GiB-budget-3-to-2"),
    pytest.param(Case(_node(4), _at(5), (4, 3), EXCEEDED), id="to-the-cap-not-one-less"),
    pytest.param(Case(_node(4), _at(20), (4, 1), EXCEEDED), id="a-pod-past-the-gpu-down-to-1"),
    pytest.param(
        Case(_gpus(_node(), 32, 16), _at(10), (2, 1), EXCEEDED, ("GPU-n1-1 has 16.0 GiB",)),
        id="the-smallest-gpu-decides",
    ),
    pytest.param(
        Case(_gpus(_node(), 32), _at(12), None, Reason.NO_CHANGE), id="a-32GiB-gpu-holds-two"
    ),
    pytest.param(
        Case(
            _node(),
            _at(8),
            (2, 1),
            EXCEEDED,
            ("pods past 90% of it (14.4 GiB) do not fit",),
            TimeSlicing(pods_do_not_fit_above=0.9),
        ),
        id="podsDoNotFitAbove-sets-the-line",
    ),
    pytest.param(
        Case(_node(4), _at(12), (4, 1), EXCEEDED, crashes=OOM),
        id="lower-than-one-less-for-the-crash",
    ),
    pytest.param(
        Case(_node(), _at(12), (2, 1), Reason.PODS_CRASHED, crashes=OOM),
        id="a-tie-is-the-crash-whose-reason-holds-raises",
    ),
    pytest.param(
        Case(_node(last_reshape=NOW - 600), _at(12), None, Reason.COOLING_DOWN),
        id="waits-for-the-node-cooldown",
    ),
]


@pytest.mark.parametrize("case", CASES)
def test_the_budget_caps_the_replicas(case: Case) -> None:
    reason, change, text = case.verdict()
    assert (reason, change) == (case.reason, case.change), text
    for words in case.says:
        assert words in text


UNKNOWN = [
    pytest.param(_at(12, pods=9), "only 9 pod(s) measured over the last 7d", id="too-few-pods"),
    pytest.param(None, "the pods' memory peaks are not read", id="unread"),
    pytest.param(fleet_peaks(*[12.0] * 20, error="query failed: 422"), "422", id="failed"),
]


@pytest.mark.parametrize(("peaks", "says"), UNKNOWN)
def test_an_unknown_budget_leaves_the_replicas_and_says_why(
    peaks: MemoryPeaks | None, says: str
) -> None:
    """Unknown is not a reason to act: the operator's 2 replicas stand, even where the pods
    that are measured (12 GiB each) would not fit two to a GPU."""
    reason, change, text = Case(_node(), peaks, None, Reason.NO_CHANGE).verdict()
    assert (reason, change) == (Reason.NO_CHANGE, None), text
    assert "memory budget unknown, the replicas stand as set" in text and says in text


def test_unread_device_memory_leaves_the_replicas_and_says_why() -> None:
    world = _node()
    world.nodes = [replace(n, gpu_stats=(GpuStats(0.5, 0.3, "GPU-n1-0"),)) for n in world.nodes]
    reason, change, text = Case(world, _at(12), None, Reason.NO_CHANGE).verdict()
    assert (reason, change) == (Reason.NO_CHANGE, None), text
    assert "device memory (FB_USED/FB_FREE) is not read" in text


def test_the_cap_never_raises() -> None:
    """A node below its cap (16 pods of 1 GiB fit) is the load rules' to change: in the load
    band it stays, with no word of the budget."""
    reason, change, text = Case(_node(), _at(1), None, Reason.NO_CHANGE).verdict()
    assert (reason, change) == (Reason.NO_CHANGE, None)
    assert "memory budget" not in text


@pytest.mark.parametrize(
    ("share", "verdict"),
    [
        pytest.param(0.5, (Reason.NO_MEMORY_HEADROOM, None), id="cap-2-refuses-the-raise"),
        pytest.param(0.6, (Reason.NODE_UNDERUSED, (2, 3)), id="cap-3-lowers-the-raise"),
        pytest.param(1.0, (Reason.NODE_UNDERUSED, (2, 4)), id="the-gate-alone"),
    ],
)
def test_a_raise_never_passes_the_cap(
    share: float, verdict: tuple[Reason, tuple[int, int] | None]
) -> None:
    """3 GiB a pod, 1.6 GiB used: the gate's 90% headroom line holds 4 (14.4 GiB); a line set
    at 50% of the GPU holds 2 (8 GiB) and at 60% 3 (9.6 GiB), so an underused node is raised no
    further."""
    ts = TimeSlicing(pods_do_not_fit_above=share)
    world = _node(util=0.1, memory=0.1)
    reason, change, text = Case(world, _at(3), None, Reason.NO_CHANGE, (), ts).verdict()
    assert (reason, change) == verdict, text
    if reason is Reason.NO_MEMORY_HEADROOM:
        assert "the memory budget caps it" in text and "room for 2 pod(s)" in text


def test_mig_and_whole_gpu_nodes_are_left_alone() -> None:
    """A MIG-enabled node is skipped as every reshape rule skips it; a node at 1 replica, or
    one advertising no `nvidia.com/gpu` (its GPUs offered some other way), is not time-sliced
    and not looked at."""
    world = (
        World()
        .node("mig", gpus=1, replicas=2, mig={"nvidia.com/mig-1g.10gb": 7})
        .node("whole", gpus=1, replicas=1)
        .node("none", gpus=0, replicas=2)
    )
    for name in ("mig", "whole", "none"):
        world.stats(name, (0.5, 0.3))
    world.memory_peaks = _at(12)
    p = world.plan()
    assert not p.actions
    assert [(s.target, s.reason) for s in p.skipped] == [("mig", Reason.MIG_ENABLED)]
