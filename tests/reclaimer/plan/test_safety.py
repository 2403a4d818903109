"""The planner never stops a busy or protected job: room in flight is not freed twice, unknown
usage is not idle, and a disruption budget that forbids the stop is honoured."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from planworld import NOW, World, starved_world

from reclaimer.decisions import ActionKind, Reason
from reclaimer.model import JobKind
from reclaimer.policy.settings import Policy

Case = Callable[[], World]
BUSY_10M = Policy(reclaim_busy_after_seconds=600.0)


def _stopped_for_x(ago: float = 60.0) -> World:
    """n1: `be/gone` stopped for ls/x, pods still bound; n2: a busy `be` job; ls/x waited 1 h."""
    return (
        starved_world()
        .stopping("be/gone", "be", {"n1": 8}, room_for="ls/x", ago=ago)
        .job("be/busy", "be", {"n2": 8}, busy=True)
        .pend("ls/x", "ls", 8, since=NOW - 3600)
    )


CASES = [
    pytest.param(
        _stopped_for_x,
        BUSY_10M,
        set(),
        {"ls/x": Reason.ROOM_IN_FLIGHT, "be/busy": Reason.NOT_IDLE},
        id="room-in-flight-is-not-freed-again-for-the-same-job",
    ),
    pytest.param(
        lambda: _stopped_for_x().job("be/idle", "be", [("n2", 0)], idle=0.99),
        Policy(),
        set(),
        {"ls/x": Reason.ROOM_IN_FLIGHT},
        id="not-even-an-idle-victim-while-in-flight",
    ),
    pytest.param(
        lambda: (
            World()
            .node("n1")
            .node("n2")
            .queue("be", deserved_gpus=0.0)
            .queue("ls", deserved_gpus=16.0, reclaimable=False)
            .stopping("be/gone", "be", {"n1": 8}, room_for="ls/x")
            .job("be/idle", "be", {"n2": 8}, idle=0.99)
            .pend("ls/x", "ls", 8, since=NOW - 3600)
            .pend("ls/y", "ls", 8, since=NOW - 7200)
        ),
        Policy(),
        {"be/idle"},
        {"ls/x": Reason.ROOM_IN_FLIGHT},
        id="the-room-is-reserved-for-its-job-another-takes-its-own-victim",
    ),
    pytest.param(
        lambda: (
            starved_world()
            .stopping("be/other", "be", {"n1": 8})
            .job("be/idle", "be", {"n2": 8}, idle=0.99)
            .pend("ls/x", "ls", 8, since=NOW - 3600)
        ),
        Policy(),
        set(),
        {"ls/x": Reason.ROOM_IN_FLIGHT, "be/idle": Reason.NO_DEMAND},
        id="a-stop-by-someone-else-is-room-in-flight-too",
    ),
    pytest.param(
        lambda: (
            starved_world()
            .job("be/half", "be", [("n1", 4), ("n1", 4)], idle=0.99)
            .deleting("be/half-0")
            .job("be/idle", "be", {"n2": 8}, idle=0.99)
            .pend("ls/x", "ls", 4, since=NOW - 3600)
        ),
        Policy(),
        set(),
        {"ls/x": Reason.ROOM_IN_FLIGHT},
        id="a-pod-being-deleted-releases-its-slots",
    ),
    pytest.param(
        lambda: (
            starved_world()
            .job("be/idle", "be", {"n1": 8}, idle=0.99)
            .job("be/other", "be", {"n2": 8}, idle=0.99)
            .unknown_usage("be/idle")
            .pend("ls/x", "ls", 8)
        ),
        Policy(),
        {"be/other"},
        {"be/idle": Reason.UNKNOWN_USAGE},
        id="unknown-usage-is-never-a-victim-even-when-forecast-idle",
    ),
    pytest.param(
        lambda: (
            starved_world()
            .job("be/kueue", "be", {"n1": 8}, idle=0.99, managed_by="Kueue admits it")
            .job("be/busy", "be", {"n2": 8}, busy=True)
            .pend("ls/x", "ls", 8)
        ),
        Policy(),
        set(),
        {"be/kueue": Reason.MANAGED_ELSEWHERE},
        id="a-job-kueue-admits-is-left-to-kueue",
    ),
    pytest.param(
        lambda: (
            starved_world()
            .job(
                "be/owned",
                "be",
                {"n1": 8},
                idle=0.99,
                kind=JobKind.JOBSET,
                controlled_by="its controller owner is Pipeline (example.com/v1) be/p",
            )
            .job("be/busy", "be", {"n2": 8}, busy=True)
            .pend("ls/x", "ls", 8)
        ),
        Policy(),
        set(),
        {"be/owned": Reason.FOREIGN_OWNER},
        id="a-job-another-kind-controls-is-left-to-its-owner",
    ),
    pytest.param(
        lambda: (
            starved_world()
            .job("be/idle", "be", {"n1": 8}, idle=0.99, disruption_block="pdb be/keep allows 0")
            .job("be/busy", "be", {"n2": 8}, busy=True)
            .pend("ls/x", "ls", 8)
        ),
        Policy(),
        set(),
        {"be/idle": Reason.DISRUPTION_BUDGET, "ls/x": Reason.NO_FIT},
        id="a-disruption-budget-blocks-the-whole-job",
    ),
]


@pytest.mark.parametrize(("build", "policy", "preempted", "skips"), CASES)
def test_safety(build: Case, policy: Policy, preempted: set[str], skips: dict[str, Reason]) -> None:
    plan = build().plan(policy)
    assert {a.target for a in plan.actions if a.kind is ActionKind.PREEMPT} == preempted
    got = {s.target: s.reason for s in plan.skipped}
    assert {t: got.get(t) for t in skips} == skips


def test_a_release_past_its_timeout_is_a_warning_and_still_not_doubled() -> None:
    plan = _stopped_for_x(ago=900.0).plan(BUSY_10M)
    assert plan.actions == ()
    (warning,) = plan.warnings
    assert (warning.target, warning.reason) == ("be/gone", Reason.RELEASE_OVERDUE)
    assert "15m ago" in warning.detail and "releaseTimeout 10m" in warning.detail
    assert _stopped_for_x(ago=300.0).plan(BUSY_10M).warnings == ()


def test_once_the_pods_are_gone_the_pending_job_is_served_normally() -> None:
    world = (
        starved_world()
        .suspended("be/gone", "be", 8, room_for="ls/x")
        .job("be/idle", "be", {"n1": 8}, idle=0.99)
        .job("be/busy", "be", {"n2": 8}, busy=True)
        .pend("ls/x", "ls", 8, since=NOW - 3600)
    )
    plan = world.plan(Policy())
    assert [a.target for a in plan.actions] == ["be/idle"]


def test_a_job_still_stopping_is_not_resumed() -> None:
    world = World().node("n1").queue("be").stopping("be/gone", "be", {"n1": 8}, ago=7200.0)
    world.jobs[-1] = world.jobs[-1].__class__(
        **{**world.jobs[-1].__dict__, "suspended_by_reclaimer": True}
    )
    plan = world.plan(Policy())
    assert plan.actions == ()
    assert {s.target: s.reason for s in plan.skipped}["be/gone"] is Reason.ROOM_IN_FLIGHT
