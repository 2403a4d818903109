"""`reclaimBusyAfter`: busy reclaimable jobs go only to a pending job that has waited that long,
and only when the idle ones cannot make room; and Volcano-style proportion shares."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from planworld import NOW, World, starved_world

from reclaimer.decisions import ActionKind, Reason
from reclaimer.plan.shares import proportion
from reclaimer.policy.settings import Policy

Case = Callable[[], World]
IDLE_ONLY = Policy(reclaim_busy_after_seconds=None)
BUSY_10M = Policy(reclaim_after_seconds=0.0, reclaim_busy_after_seconds=600.0)


def _full() -> World:
    """`starved_world` with n2 held by a busy job of another guaranteed queue."""
    gold = starved_world().queue("gold", deserved_gpus=8.0, reclaimable=False)
    return gold.job("gold/run", "gold", {"n2": 8}, busy=True)


def _busy_world(waited: float) -> World:
    return (
        _full().job("be/busy", "be", {"n1": 8}, busy=True).pend("ls/x", "ls", 8, since=NOW - waited)
    )


CASES = [
    pytest.param(
        lambda: _busy_world(3600),
        Policy(),
        set(),
        {"be/busy": Reason.NOT_IDLE, "ls/x": Reason.NO_FIT},
        id="the-default-takes-idle-jobs-only",
    ),
    pytest.param(
        lambda: _busy_world(599), BUSY_10M, set(), {"be/busy": Reason.NOT_IDLE}, id="before-wait"
    ),
    pytest.param(lambda: _busy_world(600), BUSY_10M, {"be/busy"}, {}, id="after-a-10m-wait"),
    pytest.param(
        lambda: _busy_world(3600),
        IDLE_ONLY,
        set(),
        {"be/busy": Reason.NOT_IDLE, "ls/x": Reason.NO_FIT},
        id="null-takes-idle-jobs-only",
    ),
    pytest.param(
        lambda: _busy_world(3600),
        Policy(reclaim_busy_after_seconds=7200.0),
        set(),
        {"be/busy": Reason.NOT_IDLE},
        id="longer-setting-waits-longer",
    ),
    pytest.param(
        lambda: (
            starved_world()
            .job("be/busy", "be", {"n1": 8}, busy=True)
            .job("be/idle", "be", {"n2": 8}, idle=0.99)
            .pend("ls/x", "ls", 8, since=NOW - 3600)
        ),
        BUSY_10M,
        {"be/idle"},
        {"be/busy": Reason.NOT_IDLE},
        id="idle-job-still-goes-first",
    ),
    pytest.param(
        lambda: (
            _full()
            .job("be/busy", "be", {"n1": 4}, busy=True)
            .job("be/idle", "be", {"n1": 4}, idle=0.99)
            .pend("ls/x", "ls", 8, since=NOW - 3600)
        ),
        BUSY_10M,
        {"be/busy", "be/idle"},
        {"gold/run": Reason.NOT_RECLAIMABLE},
        id="idle-and-busy-complete-a-node-together",
    ),
    pytest.param(
        lambda: (
            _full()
            .job("gold/busy", "gold", {"n1": 8}, busy=True)
            .pend("ls/x", "ls", 8, since=NOW - 3600)
        ),
        BUSY_10M,
        set(),
        {"gold/busy": Reason.NOT_RECLAIMABLE},
        id="never-a-non-reclaimable-queue",
    ),
    pytest.param(
        lambda: (
            _full()
            .job("be/young", "be", {"n1": 8}, busy=True, age=60)
            .pend("ls/x", "ls", 8, since=NOW - 3600)
        ),
        BUSY_10M,
        set(),
        {"be/young": Reason.TOO_YOUNG},
        id="minimum-runtime-still-holds",
    ),
    pytest.param(
        lambda: (
            _full()
            .job("be/last", "be", {"n1": 8}, idle=0.99, retries_left=1)
            .pend("ls/x", "ls", 8, since=NOW - 3600)
        ),
        BUSY_10M,
        set(),
        {"be/last": Reason.LAST_RETRY},
        id="volcano-job-on-its-last-retry-is-spared",
    ),
    pytest.param(
        lambda: (
            _full().job("be/two", "be", {"n1": 8}, idle=0.99, retries_left=2).pend("ls/x", "ls", 8)
        ),
        BUSY_10M,
        {"be/two"},
        {},
        id="volcano-job-with-two-retries-left-may-go",
    ),
]


@pytest.mark.parametrize(("build", "policy", "preempted", "skips"), CASES)
def test_busy_reclaim(
    build: Case, policy: Policy, preempted: set[str], skips: dict[str, Reason]
) -> None:
    plan = build().plan(policy)
    assert {a.target for a in plan.actions if a.kind is ActionKind.PREEMPT} == preempted
    got = {s.target: s.reason for s in plan.skipped}
    assert {t: got.get(t) for t in skips} == skips


def test_busy_victim_action_says_why_and_how_long_the_job_waited() -> None:
    plan = _busy_world(900).plan(BUSY_10M)
    (action,) = plan.actions
    assert action.reason is Reason.BUSY_FOR_LONG_STARVED
    assert action.evidence.for_pending == "ls/x"
    assert "forecast busy" in action.evidence.detail
    assert "ls/x has waited 15m" in action.evidence.detail


def test_idle_victim_keeps_its_reason_when_the_wait_is_long() -> None:
    world = _full().job("be/idle", "be", {"n1": 8}, idle=0.99)
    (action,) = world.pend("ls/x", "ls", 8, since=NOW - 3600).plan(Policy()).actions
    assert action.reason is Reason.IDLE_FOR_STARVED_QUEUE


@pytest.mark.parametrize(
    ("weights", "requests", "total", "expected"),
    [
        pytest.param({"a": 1, "b": 1}, {"a": 10, "b": 10}, 8, {"a": 4, "b": 4}, id="even-split"),
        pytest.param({"a": 1, "b": 3}, {"a": 10, "b": 10}, 8, {"a": 2, "b": 6}, id="by-weight"),
        pytest.param(
            {"a": 1, "b": 1}, {"a": 1, "b": 10}, 8, {"a": 1, "b": 7}, id="surplus-dealt-again"
        ),
        pytest.param({"a": 1, "b": 1}, {"a": 0, "b": 3}, 8, {"a": 0, "b": 3}, id="capped-by-asks"),
        pytest.param({"a": 0, "b": 1}, {"a": 5, "b": 5}, 8, {"a": 0, "b": 5}, id="zero-weight"),
        pytest.param(
            {"a": 1, "b": 1, "c": 2},
            {"a": 1, "b": 2, "c": 100},
            12,
            {"a": 1, "b": 2, "c": 9},
            id="three-rounds",
        ),
    ],
)
def test_proportion_shares_like_volcano(
    weights: dict[str, float], requests: dict[str, float], total: float, expected: dict[str, float]
) -> None:
    got = proportion(weights, requests, total)
    assert got == pytest.approx(expected)
    assert sum(got.values()) <= total + 1e-9


@pytest.mark.parametrize(
    ("pending_gpus", "preempted"),
    [
        pytest.param(8, {"be/a"}, id="idle-tenant-share-goes-to-the-one-waiting"),
        pytest.param(0, set(), id="nobody-waits-nobody-deserves"),
    ],
)
def test_weight_queues_share_by_request(pending_gpus: int, preempted: set[str]) -> None:
    world = (
        World()
        .node("n1")
        .node("n2")
        .queue("be", deserved_gpus=0.0)
        .queue("ls", weight=1, reclaimable=False)
        .queue("idle-tenant", weight=3, reclaimable=False)
        .job("be/a", "be", {"n1": 8}, idle=0.99)
        .job("be/b", "be", {"n2": 8}, idle=0.98)
    )
    if pending_gpus:
        world = world.pend("ls/x", "ls", pending_gpus)
    plan = world.plan(IDLE_ONLY)
    assert {a.target for a in plan.actions} == preempted
