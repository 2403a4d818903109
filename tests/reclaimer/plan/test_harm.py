"""Pods that do not fit a time-sliced GPU lower its node, down to 1 replica, and hold its raises
(`reclaimer.plan.harm`): container crashes there, or a GPU's pods at their peaks past its memory."""

from __future__ import annotations

from dataclasses import dataclass, field, replace

import pytest

from reclaimer.decisions import ActionKind, Reason
from reclaimer.model import ContainerCrash
from reclaimer.plan.planner import plan
from reclaimer.policy.settings import Policy, TimeSlicing
from tests.reclaimer.planworld import HOUR, NOW, World

GIB = 1024.0**3
DAY = 86400.0


def _crash(pod: str, ago: float, node: str = "n1", reason: str = "OOMKilled") -> ContainerCrash:
    code = 137 if reason == "OOMKilled" else 1
    return ContainerCrash(pod, node, "main", NOW - ago, reason, code, restarts=3)


def _node(replicas: int = 2, util: float = 0.5, memory: float = 0.3, **kw: object) -> World:
    """n1: one 16 GiB GPU in the load band (no load rule changes it) unless `util` says so."""
    return World().node("n1", gpus=1, replicas=replicas, **kw).stats("n1", (util, memory))


def _pods(world: World, *gib: float, gpu: str = "GPU-n1-0") -> World:
    """Pods on `gpu` of n1, each reading `gib[k]` GiB now."""
    for k, g in enumerate(gib):
        world.usage(f"ls/p{k}-0", "n1", gpu, 0.3, g * GIB)
    return world


@dataclass
class Case:
    world: World
    change: tuple[int, int] | None  # (from, to) of the reshape, or None: no action on n1
    reason: Reason
    crashes: tuple[ContainerCrash, ...] = ()
    says: tuple[str, ...] = ()  # in the evidence or the skip's detail
    time_slicing: TimeSlicing = field(default_factory=TimeSlicing)

    def verdict(self) -> tuple[Reason, tuple[int | None, int | None] | None, str]:
        """What the plan says of n1: (reason, (from, to) or None, evidence or skip detail)."""
        snapshot = replace(self.world.snapshot(), crashes=self.crashes)
        policy = Policy(time_slicing=self.time_slicing)
        p = plan(snapshot, self.world.forecasts, policy, self.world.now)
        for a in p.actions:
            if a.kind is ActionKind.RESHAPE and a.target == "n1":
                return a.reason, (a.from_replicas, a.to_replicas), a.evidence.detail
        (skip,) = [s for s in p.skipped if s.target == "n1"]
        return skip.reason, None, skip.detail


def _with_peak(world: World, pod: str, gib: float) -> World:
    assert world.memory_peaks is not None
    pods = {**world.memory_peaks.pods, pod: gib * GIB}
    world.memory_peaks = replace(world.memory_peaks, pods=pods)
    return world


OOM = (_crash("ls/a-0", 600),)
LOWERINGS = [
    pytest.param(
        Case(_node(), (2, 1), Reason.PODS_CRASHED, OOM, ("ls/a-0 (main) OOMKilled exit 137 10m",)),
        id="a-crash-lowers-2-to-1",
    ),
    pytest.param(Case(_node(4), (4, 3), Reason.PODS_CRASHED, OOM), id="one-replica-per-cooldown"),
    pytest.param(
        Case(
            _node(4),
            (4, 3),
            Reason.PODS_CRASHED,
            (_crash("ls/a-0", 600, reason="Error"), _crash("be/b-0", 900)),
            ("2 container crash(es)", "ls/a-0 (main) Error exit 1 10m ago, 3 restart(s)"),
        ),
        id="a-non-zero-exit-is-a-crash",
    ),
    pytest.param(
        Case(_node(last_reshape=NOW - 2 * HOUR), None, Reason.NO_CHANGE, (_crash("a", 3 * HOUR),)),
        id="a-crash-before-the-last-reshape-is-about-the-count-before",
    ),
    pytest.param(
        Case(_node(), None, Reason.NO_CHANGE, (_crash("ls/a-0", 8 * DAY),)),
        id="a-crash-older-than-the-hold-is-forgotten",
    ),
    pytest.param(
        Case(_node(), None, Reason.NO_CHANGE, (_crash("ls/a-0", 600, node="n2"),)),
        id="a-crash-on-another-node",
    ),
    pytest.param(
        Case(_node(last_reshape=NOW - 600), None, Reason.COOLING_DOWN, (_crash("a", 300),)),
        id="a-lowering-waits-for-the-node-cooldown",
    ),
    pytest.param(
        Case(World().node("n1", gpus=1, replicas=2), (2, 1), Reason.PODS_CRASHED, OOM),
        id="crashes-lower-without-gpu-stats",
    ),
    pytest.param(
        Case(_pods(_node(4), 9, 9), (4, 1), Reason.PODS_CRASHED, OOM, ("add up to 18.0 GiB",)),
        id="a-crash-lowers-to-what-the-peaks-allow",
    ),
    pytest.param(
        Case(_pods(_node(3), 6, 6, 6), (3, 2), Reason.PODS_DO_NOT_FIT, says=("ls/p0-0 6.0 GiB",)),
        id="peaks-past-the-memory-lower-to-what-fits",
    ),
    pytest.param(
        Case(_pods(_node(), 8, 8), None, Reason.NO_CHANGE), id="peaks-that-just-fill-it-fit"
    ),
    pytest.param(
        Case(
            _pods(_node(), 8, 8),
            (2, 1),
            Reason.PODS_DO_NOT_FIT,
            says=("more than 14.4 GiB (90% of its memory)",),
            time_slicing=TimeSlicing(pods_do_not_fit_above=0.9),
        ),
        id="podsDoNotFitAbove-sets-the-line",
    ),
    pytest.param(
        Case(
            _with_peak(_pods(_node(), 2, 2), "ls/p1-0", 15),
            (2, 1),
            Reason.PODS_DO_NOT_FIT,
            says=("ls/p1-0 15.0 GiB, ls/p0-0 2.0 GiB",),
        ),
        id="a-pod-counts-at-its-week-peak-not-its-reading",
    ),
    pytest.param(
        Case(
            _pods(
                World().node("n1", gpus=2, replicas=2).stats("n1", (0.5, 0.3), (0.5, 0.3)), 9
            ).usage("ls/q-0", "n1", "GPU-n1-1", 0.3, 9 * GIB),
            None,
            Reason.NO_CHANGE,
        ),
        id="pods-on-different-gpus-do-not-add-up",
    ),
    pytest.param(
        Case(_pods(World().node("n1", gpus=1, replicas=2), 9, 9), None, Reason.NO_METRICS),
        id="unread-device-memory-is-no-evidence",
    ),
]


@pytest.mark.parametrize("case", LOWERINGS)
def test_pods_that_do_not_fit_lower_the_node(case: Case) -> None:
    reason, change, text = case.verdict()
    assert (reason, change) == (case.reason, case.change), text
    for words in case.says:
        assert words in text


def _underused(**kw: object) -> World:
    """n1 idle with memory to spare: the load rule raises it 2 -> 4 when nothing holds it."""
    return _node(util=0.1, memory=0.2, **kw)


HOLDS = [
    pytest.param(Case(_underused(), (2, 4), Reason.NODE_UNDERUSED), id="nothing-holds-the-raise"),
    pytest.param(
        Case(
            _underused(last_reshape=NOW - 2 * HOUR),
            None,
            Reason.RAISE_HELD,
            (_crash("ls/a-0", 3 * HOUR),),
            ("would raise 2 -> 4: 1 container crash(es)", "raises held for 7d"),
        ),
        id="a-crash-within-the-hold",
    ),
    pytest.param(
        Case(
            _underused(last_reshape=NOW - 2 * DAY, reshape_reason="PodsDoNotFit"),
            None,
            Reason.RAISE_HELD,
            says=("lowered 2d ago for PodsDoNotFit",),
        ),
        id="a-lowering-for-harm-within-the-hold",
    ),
    pytest.param(
        Case(
            _underused(last_reshape=NOW - 2 * DAY, reshape_reason="SharedPodsCrashed"),
            (2, 4),
            Reason.NODE_UNDERUSED,
            time_slicing=TimeSlicing(harm_raise_hold_seconds=DAY),
        ),
        id="the-hold-ends",
    ),
    pytest.param(
        Case(
            _underused(last_reshape=NOW - 2 * DAY, reshape_reason="NodeSaturated"),
            (2, 4),
            Reason.NODE_UNDERUSED,
        ),
        id="a-lowering-for-load-holds-nothing",
    ),
]


@pytest.mark.parametrize("case", HOLDS)
def test_raises_are_held_after_pods_did_not_fit(case: Case) -> None:
    reason, change, text = case.verdict()
    assert (reason, change) == (case.reason, case.change), text
    for words in case.says:
        assert words in text
