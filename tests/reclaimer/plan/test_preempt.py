"""Preemption rules, one world per rule: what is preempted, and why the rest is left alone."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

import pytest
from planworld import HOUR, NOW, World, starved_world

from reclaimer.decisions import ActionKind, Reason
from reclaimer.model import DataQuality
from reclaimer.plan.victims import confidence_band
from reclaimer.policy.settings import Limits, Policy

Case = Callable[[], World]


CASES = [
    pytest.param(
        lambda: (
            starved_world()
            .job("be/idle", "be", {"n1": 8}, idle=0.99)
            .job("be/busy", "be", {"n2": 8}, busy=True)
            .pend("ls/x", "ls", 8)
        ),
        Policy(),
        {"be/idle"},
        {"be/busy": Reason.NOT_IDLE},
        id="idle-job-makes-room-for-starved-queue",
    ),
    pytest.param(
        lambda: (
            starved_world()
            .job("be/gang", "be", {"n1": 4, "n2": 4}, idle=0.99)
            .job("be/busy", "be", {"n1": 4, "n2": 4}, busy=True)
            .pend("ls/x", "ls", 8, pods=1)
        ),
        Policy(),
        set(),
        {"ls/x": Reason.NO_FIT, "be/gang": Reason.NO_DEMAND},
        id="gang-spread-over-nodes-does-not-fit-one-8-gpu-pod",
    ),
    pytest.param(
        lambda: (
            starved_world()
            .job("be/gang", "be", {"n1": 4, "n2": 4}, idle=0.99)
            .job("be/busy", "be", {"n1": 4, "n2": 4}, busy=True)
            .pend("ls/x", "ls", 8, pods=2)
        ),
        Policy(),
        {"be/gang"},
        {},
        id="whole-gang-preempted-for-two-4-gpu-pods",
    ),
    pytest.param(
        lambda: (
            World()
            .node("n1", gpus=4, replicas=2)
            .queue("be", deserved_gpus=0.0)
            .queue("ls", deserved_gpus=8.0, reclaimable=False)
            .job("be/busy", "be", [("n1", 4), ("n1", 4)], busy=True)
            .job("be/idle", "be", {"n1": 2}, idle=0.99)
            .pend("ls/x", "ls", 2)
        ),
        Policy(),
        set(),
        {"ls/x": Reason.NO_FIT, "be/idle": Reason.NO_DEMAND},
        id="overcommitted-node-pays-back-before-it-frees",
    ),
    pytest.param(
        lambda: (
            starved_world()
            .job("be/small1", "be", {"n1": 4}, idle=0.99)
            .job("be/small2", "be", {"n1": 4}, idle=0.99)
            .job("be/big", "be", {"n2": 8}, idle=0.99)
            .pend("ls/x", "ls", 8)
        ),
        Policy(),
        {"be/big"},
        {"be/small1": Reason.NO_DEMAND, "be/small2": Reason.NO_DEMAND},
        id="fewest-victims",
    ),
    pytest.param(
        lambda: (
            starved_world()
            .job("be/a", "be", {"n1": 4}, idle=0.99)
            .job("be/b", "be", {"n1": 4}, idle=0.99)
            .job("be/busy", "be", {"n2": 8}, busy=True)
            .pend("ls/x", "ls", 8)
        ),
        Policy(),
        {"be/a", "be/b"},
        {},
        id="two-half-node-victims-complete-one-pod-together",
    ),
    pytest.param(
        lambda: (
            starved_world()
            .job("be/sure", "be", {"n1": 8}, idle=0.99)
            .job("be/unsure", "be", {"n2": 8}, idle=0.93)
            .pend("ls/x", "ls", 8)
        ),
        Policy(),
        {"be/sure"},
        {"be/unsure": Reason.NO_DEMAND},
        id="most-confident-victim",
    ),
    pytest.param(
        lambda: (
            starved_world()
            .job("be/old", "be", {"n1": 8}, idle=0.99, age=10 * HOUR)
            .job("be/young", "be", {"n2": 8}, idle=0.99, age=1 * HOUR)
            .pend("ls/x", "ls", 8)
        ),
        Policy(),
        {"be/young"},
        {},
        id="tie-broken-by-least-work-lost",
    ),
    pytest.param(
        lambda: (
            starved_world()
            .job("be/old", "be", {"n1": 8}, idle=0.99, age=10 * HOUR)
            .job("be/young", "be", {"n2": 8}, idle=0.97, age=1 * HOUR)
            .pend("ls/x", "ls", 8)
        ),
        Policy(confidence_tie_band=0.05),
        {"be/young"},
        {"be/old": Reason.NO_DEMAND},
        id="confidences-in-one-band-tie-and-least-work-lost-wins",
    ),
    pytest.param(
        lambda: (
            starved_world()
            .job("be/old", "be", {"n1": 8}, idle=0.99, age=10 * HOUR)
            .job("be/young", "be", {"n2": 8}, idle=0.97, age=1 * HOUR)
            .pend("ls/x", "ls", 8)
        ),
        Policy(),
        {"be/old"},
        {"be/young": Reason.NO_DEMAND},
        id="default-band-zero-ranks-by-exact-confidence",
    ),
    pytest.param(
        lambda: (
            starved_world()
            .job("be/old", "be", {"n1": 8}, idle=0.96, age=10 * HOUR)
            .job("be/young", "be", {"n2": 8}, idle=0.95, age=1 * HOUR)
            .pend("ls/x", "ls", 8)
        ),
        Policy(confidence_tie_band=0.05),
        {"be/old"},
        {"be/young": Reason.NO_DEMAND},
        id="next-band-down-loses-even-with-less-work-lost",
    ),
    pytest.param(
        lambda: (
            starved_world()
            .job("be/old", "be", {"n1": 8}, idle=0.99, age=10 * HOUR)
            .job("be/young", "be", {"n2": 8}, idle=0.90, age=1 * HOUR)
            .pend("ls/x", "ls", 8)
        ),
        Policy(confidence_tie_band=0.2),
        {"be/young"},
        {"be/old": Reason.NO_DEMAND},
        id="wider-band-lets-work-lost-decide",
    ),
    pytest.param(
        lambda: (
            starved_world()
            .job("be/old", "be", {"n1": 8}, idle=0.99, age=10 * HOUR)
            .job("be/young", "be", {"n2": 8}, idle=0.99, age=1.5 * HOUR)
            .pend("ls/x", "ls", 8)
        ),
        Policy(checkpoint_interval_seconds=HOUR),
        {"be/old"},
        {},
        id="checkpoints-change-work-lost",
    ),
    pytest.param(
        lambda: (
            starved_world()
            .job("be/high", "be", {"n1": 8}, idle=0.99, priority=10)
            .job("be/low", "be", {"n2": 8}, idle=0.99, priority=1)
            .pend("ls/x", "ls", 8)
        ),
        Policy(),
        {"be/low"},
        {},
        id="tie-broken-by-lowest-priority",
    ),
    pytest.param(
        lambda: (
            starved_world()
            .queue("prod", deserved_gpus=0.0, reclaimable=False)
            .job("prod/idle", "prod", {"n1": 8}, idle=0.99)
            .job("be/busy", "be", {"n2": 8}, busy=True)
            .pend("ls/x", "ls", 8)
        ),
        Policy(),
        set(),
        {"prod/idle": Reason.NOT_RECLAIMABLE, "ls/x": Reason.NO_FIT},
        id="non-reclaimable-queue-untouched",
    ),
    pytest.param(
        lambda: (
            starved_world()
            .job(
                "be/a", "be", {"n1": 8}, idle=0.99, annotations={"volcano.sh/preemptable": "false"}
            )
            .job(
                "be/b",
                "be",
                {"n2": 8},
                idle=0.99,
                pod_annotations={"gpu-reclaim.io/preemptable": "False"},
            )
            .pend("ls/x", "ls", 8)
        ),
        Policy(),
        set(),
        {"be/a": Reason.OPTED_OUT, "be/b": Reason.OPTED_OUT, "ls/x": Reason.NO_FIT},
        id="opted-out-by-volcano-or-own-annotation",
    ),
    pytest.param(
        lambda: (
            starved_world()
            .job("be/new", "be", {"n1": 8}, idle=0.99, age=300)
            .job(
                "be/long",
                "be",
                {"n2": 8},
                idle=0.99,
                age=1800,
                annotations={"volcano.sh/cooldown-time": "1h"},
            )
            .pend("ls/x", "ls", 8)
        ),
        Policy(),
        set(),
        {"be/new": Reason.TOO_YOUNG, "be/long": Reason.TOO_YOUNG},
        id="minimum-runtime-default-and-annotation",
    ),
    pytest.param(
        lambda: (
            starved_world()
            .job(
                "be/quick",
                "be",
                {"n1": 8},
                idle=0.99,
                age=300,
                annotations={"volcano.sh/cooldown-time": "60s"},
            )
            .job("be/busy", "be", {"n2": 8}, busy=True)
            .pend("ls/x", "ls", 8)
        ),
        Policy(),
        {"be/quick"},
        {},
        id="cooldown-annotation-shortens-minimum-runtime",
    ),
    pytest.param(
        lambda: (
            starved_world()
            .job("be/a", "be", {"n1": 8}, idle=0.99)
            .acted("be/a", 600)
            .job("be/b", "be", {"n2": 8})
            .pend("ls/x", "ls", 8)
        ),
        Policy(),
        set(),
        {"be/a": Reason.COOLING_DOWN, "be/b": Reason.NO_FORECAST},
        id="job-cooldown-and-missing-forecast",
    ),
    pytest.param(
        lambda: (
            starved_world()
            .job("be/a", "be", {"n1": 8}, idle=0.80)
            .job("be/b", "be", {"n2": 8}, busy=True)
            .pend("ls/x", "ls", 8)
        ),
        Policy(),
        set(),
        {"be/a": Reason.NOT_IDLE, "be/b": Reason.NOT_IDLE},
        id="low-confidence-and-busy-not-idle",
    ),
    pytest.param(
        lambda: (
            starved_world()
            .job("be/a", "be", {"n1": 8}, idle=0.99)
            .job("ls/run", "ls", {"n2": 8}, busy=True)
            .pend("ls/x", "ls", 8)
        ),
        Policy(),
        set(),
        {"ls/x": Reason.QUEUE_AT_SHARE, "be/a": Reason.NO_DEMAND},
        id="queue-at-deserved-share-gets-nothing",
    ),
    pytest.param(
        lambda: starved_world().job("be/a", "be", {"n1": 8}, idle=0.99).pend("ls/x", "ls", 8),
        Policy(),
        set(),
        {"ls/x": Reason.FITS_FREE, "be/a": Reason.NO_DEMAND},
        id="fits-free-capacity-no-preemption",
    ),
    pytest.param(
        lambda: (
            World()
            .node("n1")
            .node("n2")
            .queue("be", deserved_gpus=8.0, guarantee_gpus=16.0)
            .queue("ls", deserved_gpus=8.0, reclaimable=False)
            .job("be/a", "be", {"n1": 8}, idle=0.99)
            .job("be/b", "be", {"n2": 8}, idle=0.99)
            .pend("ls/x", "ls", 8)
        ),
        Policy(),
        set(),
        {"be/a": Reason.BELOW_GUARANTEE, "ls/x": Reason.NO_FIT},
        id="queue-guarantee-protects",
    ),
    pytest.param(
        lambda: (
            World()
            .node("n1")
            .node("n2")
            .queue("be", deserved_gpus=32.0)
            .job("be/idle", "be", {"n1": 8}, idle=0.99)
            .job("be/busy", "be", {"n2": 8}, busy=True)
            .pend("be/next", "be", 8)
        ),
        Policy(),
        set(),
        {"be/next": Reason.NO_FIT, "be/idle": Reason.NO_DEMAND},
        id="no-shuffling-within-a-queue",
    ),
    pytest.param(
        lambda: (
            World()
            .node("n1")
            .node("n2")
            .queue("be", deserved_gpus=8.0)
            .queue("ls", deserved_gpus=8.0, reclaimable=False, capability_gpus=4.0)
            .job("be/a", "be", {"n1": 8}, idle=0.99)
            .job("be/b", "be", {"n2": 8}, idle=0.99)
            .pend("ls/x", "ls", 8)
        ),
        Policy(),
        set(),
        {"ls/x": Reason.QUEUE_AT_CAPABILITY},
        id="queue-capability-caps-demand",
    ),
    pytest.param(
        lambda: (
            World()
            .node("n1")
            .node("n2")
            .queue("be", weight=1)
            .queue("ls", weight=3, reclaimable=False)
            .job("be/a", "be", {"n1": 8}, idle=0.99)
            .job("be/b", "be", {"n2": 8}, idle=0.99)
            .pend("ls/x", "ls", 8)
        ),
        Policy(),
        {"be/a"},
        {"be/b": Reason.NO_DEMAND},
        id="weight-share-when-deserved-unset",
    ),
    pytest.param(
        lambda: (
            World()
            .node("n1")
            .node("n2")
            .queue("be", weight=1)
            .queue("ls", weight=100, reclaimable=False)
            .job("be/a", "be", {"n1": 8}, idle=0.99)
            .job("be/b", "be", {"n2": 8}, idle=0.99)
            .pend("ls/x", "ls", 8)
        ),
        Policy(queue_shares={"ls": 0.0}),
        set(),
        {"ls/x": Reason.QUEUE_AT_SHARE},
        id="policy-queue-share-overrides-weight",
    ),
]


@pytest.mark.parametrize(("build", "policy", "preempted", "skips"), CASES)
def test_preemption(
    build: Case, policy: Policy, preempted: set[str], skips: dict[str, Reason]
) -> None:
    world = build()
    plan = world.plan(policy)
    assert {a.target for a in plan.actions if a.kind is ActionKind.PREEMPT} == preempted
    assert all(a.kind is ActionKind.PREEMPT for a in plan.actions)
    got = {s.target: s.reason for s in plan.skipped}
    assert {t: got.get(t) for t in skips} == skips
    for action in plan.actions:
        ev = action.evidence
        assert action.reason is Reason.IDLE_FOR_STARVED_QUEUE
        assert ev.forecast is not None and ev.forecast.job == action.target
        assert ev.for_pending in {d.job for d in world.pending}
        assert ev.gpus_freed == sum(p.gpus for p in world.pods if p.job == action.target)


LIMIT_CASES = [
    pytest.param(Limits(max_preemptions_per_cycle=1), 1, id="per-cycle"),
    pytest.param(Limits(max_preemptions_per_namespace=1), 2, id="per-namespace"),
    pytest.param(Limits(max_gpus_freed_per_cycle=12), 1, id="gpus-freed"),
    pytest.param(Limits(max_pods_per_node=1), 2, id="pods-per-node"),
    pytest.param(Limits(max_preemptions_per_cycle=0), 0, id="zero-disables"),
]


@pytest.mark.parametrize(("limits", "expected"), LIMIT_CASES)
def test_limits(limits: Limits, expected: int) -> None:
    """Three starved 8-GPU pods; idle victims in two namespaces, two pods per node on n1."""
    world = (
        World()
        .node("n1")
        .node("n2")
        .node("n3")
        .queue("be", deserved_gpus=0.0)
        .queue("be2", deserved_gpus=0.0)
        .queue("ls", deserved_gpus=24.0, reclaimable=False)
        .job("be/a", "be", [("n1", 4), ("n1", 4)], idle=0.99)
        .job("be/b", "be", {"n2": 8}, idle=0.98)
        .job("team/c", "be2", {"n3": 8}, idle=0.97)
        .pend("ls/x", "ls", 8)
        .pend("ls/y", "ls", 8)
        .pend("ls/z", "ls", 8)
    )
    plan = world.plan(Policy(limits=replace(Limits(max_preemptions_per_cycle=9), **_set(limits))))
    assert len(plan.actions) == expected
    if expected < 3:
        assert any(s.reason is Reason.LIMIT_REACHED for s in plan.skipped)


def _set(limits: Limits) -> dict[str, int]:
    """The fields of `limits` that differ from the default."""
    default = Limits()
    return {k: v for k, v in vars(limits).items() if getattr(default, k) != v}


@pytest.mark.parametrize(
    ("quality", "reason"),
    [
        pytest.param(DataQuality(metrics_at=NOW - 3600), Reason.STALE_DATA, id="stale"),
        pytest.param(DataQuality(metrics_at=None), Reason.STALE_DATA, id="no-metrics"),
        pytest.param(DataQuality(metrics_at=NOW + 600), Reason.CLOCK_SKEW, id="from-the-future"),
        pytest.param(
            DataQuality(metrics_at=NOW, complete=False, problems=("q failed",)),
            Reason.INCOMPLETE_DATA,
            id="incomplete",
        ),
    ],
)
def test_bad_data_stops_everything(quality: DataQuality, reason: Reason) -> None:
    world = (
        starved_world()
        .job("be/idle", "be", {"n1": 8}, idle=0.99)
        .job("be/busy", "be", {"n2": 8}, busy=True)
        .pend("ls/x", "ls", 8)
        .suspended("be/s", "be", 8)
    )
    assert world.plan().actions  # the same world with good data acts
    world.quality = quality
    plan = world.plan()
    assert plan.actions == ()
    assert [s.reason for s in plan.skipped] == [reason]


def test_disabled_preemption_still_reserves_room_and_says_so() -> None:
    world = (
        starved_world()
        .job("be/idle", "be", {"n1": 8}, idle=0.99)
        .job("be/busy", "be", {"n2": 8}, busy=True)
        .pend("ls/x", "ls", 8)
    )
    plan = world.plan(Policy(actions=replace(Policy().actions, preempt=False)))
    assert plan.actions == ()
    assert (Reason.DISABLED, "*") in {(s.reason, s.target) for s in plan.skipped}
    assert {s.target: s.reason for s in plan.skipped}["ls/x"] is Reason.NO_FIT


@pytest.mark.parametrize(
    ("confidence", "width", "band"),
    [
        pytest.param(1.0, 0.05, 0.0, id="certain-is-top-band"),
        pytest.param(0.951, 0.05, 0.0, id="just-above-0.95-is-top-band"),
        pytest.param(0.95, 0.05, 1.0, id="0.95-opens-the-second-band"),
        pytest.param(0.9, 0.05, 2.0, id="0.90-third-band"),
        pytest.param(0.87, 0.05, 2.0, id="0.87-third-band"),
        pytest.param(0.87, 0.0, -0.87, id="width-zero-is-exact"),
    ],
)
def test_confidence_band(confidence: float, width: float, band: float) -> None:
    assert confidence_band(confidence, width) == band


def test_evidence_reads_work_lost_in_whole_units() -> None:
    """A day and a bit of work lost reads '1d59m32s', never raw seconds like '89971.6s'."""
    world = (
        starved_world()
        .job("be/idle", "be", {"n1": 8}, idle=0.99, age=89971.6)
        .job("be/busy", "be", {"n2": 8}, busy=True)
        .pend("ls/x", "ls", 8)
    )
    (action,) = world.plan().actions
    assert "loses 1d59m32s of work" in action.evidence.detail
