"""A job measured busy now is not stopped as idle, whatever its forecast says.

The forecast reads a day of history; the cycle's per-pod readings (`Snapshot.pod_gpus`) say what
each pod does now. A pod at or above the idle threshold now (busy, as the forecast counts a
sample) makes its job a `NotForecastIdle` skip that names the pod and its reading (or, under
`reclaimBusyAfter`, a busy candidate stopped only by that rule), for an unwarned stop as for a
warned one (`test_warning.py`).
"""

from __future__ import annotations

import pytest
from planworld import NOW, World, starved_world

from reclaimer.decisions import ActionKind, Plan, Reason
from reclaimer.model import PodGpuUsage
from reclaimer.policy.settings import Policy, load_policy

BUSY_10M = Policy(reclaim_after_seconds=0.0, reclaim_busy_after_seconds=600.0)


def _world(reading: float | None) -> World:
    """be/idle (forecast idle at 1.0) on n1 and be/other (0.95) on n2; ls/x needs one node."""
    w = (
        starved_world()
        .job("be/idle", "be", {"n1": 8}, idle=1.0)
        .job("be/other", "be", {"n2": 8}, idle=0.95)
        .pend("ls/x", "ls", 8)
    )
    w.pod_gpus.append(PodGpuUsage("be/idle-0", "n1", "GPU-n1-0", busy=reading))
    return w


def _stops(p: Plan) -> list[tuple[str, Reason]]:
    return [(a.target, a.reason) for a in p.actions if a.kind is ActionKind.PREEMPT]


@pytest.mark.parametrize(
    "policy",
    [
        pytest.param(Policy(), id="default"),
        pytest.param(load_policy("costAwareStops: true"), id="cost-aware"),
    ],
)
def test_a_job_forecast_idle_but_busy_now_is_refused_and_another_stopped(policy: Policy) -> None:
    p = _world(0.9).plan(policy)
    assert _stops(p) == [("be/other", Reason.IDLE_FOR_STARVED_QUEUE)]
    (skip,) = [s for s in p.skipped if s.target == "be/idle"]
    assert skip.reason is Reason.NOT_IDLE
    assert "be/idle-0 is 90% busy now" in skip.detail


@pytest.mark.parametrize(
    "reading",
    [pytest.param(0.01, id="quiet"), pytest.param(None, id="unreadable")],
)
def test_a_quiet_or_unread_pod_leaves_the_forecast_to_decide(reading: float | None) -> None:
    assert _stops(_world(reading).plan(Policy())) == [("be/idle", Reason.IDLE_FOR_STARVED_QUEUE)]


def test_a_reading_at_the_threshold_is_busy_as_the_forecast_counts_it() -> None:
    threshold = Policy().threshold
    assert _stops(_world(threshold).plan(Policy())) == [("be/other", Reason.IDLE_FOR_STARVED_QUEUE)]


def test_under_reclaim_busy_after_it_is_a_busy_candidate_taken_last() -> None:
    w = (
        starved_world()
        .queue("gold", deserved_gpus=8.0, reclaimable=False)
        .job("gold/run", "gold", {"n2": 8}, busy=True)
        .job("be/idle", "be", {"n1": 8}, idle=1.0)
        .pend("ls/x", "ls", 8, since=NOW - 3600)
    )
    w.pod_gpus.append(PodGpuUsage("be/idle-0", "n1", "GPU-n1-0", busy=0.9))
    p = w.plan(BUSY_10M)
    assert _stops(p) == [("be/idle", Reason.BUSY_FOR_LONG_STARVED)]
    assert "be/idle-0 is 90% busy now" in p.actions[0].evidence.detail
