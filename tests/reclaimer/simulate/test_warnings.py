"""Warnings before a stop, replayed: the stop comes at the first tick a warning period after the
warning, the guaranteed job waits that much longer, and a job that turns busy within its warning
is not stopped (counted as a warning withdrawn)."""

from __future__ import annotations

import pytest
from simworld import BURSTY, HOUR, P, run

from reclaimer.decisions import Action, ActionKind, Evidence, Reason
from reclaimer.model import Job, JobKind, PendingDemand, StopWarning
from reclaimer.policy.settings import load_policy
from reclaimer.simulate.devices import _notice
from reclaimer.simulate.jobs import Event, EventKind
from reclaimer.simulate.strategies import RunningJob, Strategy, TickView

STARVED = [
    P("be-1", "BE", 0.0, 20 * HOUR),
    P("be-2", "BE", 0.0, 20 * HOUR),
    P("ls-1", "LS", 3 * HOUR, 1 * HOUR),
    P("ls-late", "LS", 40 * HOUR, 1 * HOUR),
]
TEN_MIN = load_policy("warning: {warnBefore: 10m}")


def _cuts(events: list[Event]) -> list[Event]:
    return [e for e in events if e.kind is EventKind.PREEMPTED]


def test_the_stop_waits_out_the_warning_and_the_guaranteed_job_waits_that_much_longer() -> None:
    plain_events: list[Event] = []
    warned_events: list[Event] = []
    plain = run(STARVED, [1, 1], Strategy.FORECAST, events=plain_events)
    warned = run(STARVED, [1, 1], Strategy.FORECAST, reclaim_policy=TEN_MIN, events=warned_events)
    (plain_cut,) = _cuts(plain_events)
    (warned_cut,) = _cuts(warned_events)
    assert plain.warnings == 0 and warned.warnings == 1
    assert warned.preemptions == 1 and warned.warnings_cancelled_busy == 0
    assert warned_cut.job == plain_cut.job  # the same victim, stopped a warning later
    assert warned_cut.at - plain_cut.at >= 600
    # ls-1 waits the delay longer, ls-late not at all: the p50 of the two moves by half of it
    delay = warned_cut.at - plain_cut.at
    assert warned.wait_p50_s["ls"] - plain.wait_p50_s["ls"] == pytest.approx(delay / 2, abs=1)


def test_a_victim_busy_again_within_its_warning_is_not_stopped_and_that_costs_waiting() -> None:
    # BURSTY: idle 40 minutes, busy 10; a 30-minute warning always reaches the busy stretch
    half_hour = load_policy("warning: {warnBefore: 30m}")
    plain = run(STARVED, [1, 1], Strategy.FORECAST, BURSTY)
    warned = run(STARVED, [1, 1], Strategy.FORECAST, BURSTY, reclaim_policy=half_hour)
    assert plain.preemptions == 1
    assert warned.preemptions == 0
    assert warned.warnings >= 1 and warned.warnings_cancelled_busy == warned.warnings
    assert warned.wait_p95_s["ls"] > plain.wait_p95_s["ls"]


def _view(for_pending: str) -> TickView:
    warning = StopWarning(0.0, 600.0, for_pending, "IdleJobForStarvedQueue")
    job = Job("be/a", JobKind.PYTORCH_JOB, "be", "a", "be", 1, warning=warning)
    pending = (
        PendingDemand("ls", "ls/one-pod", 8, min_member=1),
        PendingDemand("ls", "ls/gang", 8, min_member=2),
    )
    running = (RunningJob(0, job, (), 0.0, 3600.0, True),)
    return TickView(300.0, running, pending, (), (), {})


def test_each_view_withdraws_only_the_warnings_for_the_pending_jobs_it_shows() -> None:
    """The device view plans single-pod pending jobs, the node view multi-pod ones: neither may
    call the other's pending job gone (it is still pending, only not shown there)."""
    cancel = Action(ActionKind.CANCEL, "be/a", Reason.DEMAND_GONE, Evidence())
    assert not _notice(cancel, _view("ls/gang"), gangs=False)
    assert _notice(cancel, _view("ls/gang"), gangs=True)
    assert not _notice(cancel, _view("ls/one-pod"), gangs=True)
    assert _notice(cancel, _view("ls/one-pod"), gangs=False)
    assert _notice(cancel, _view("ls/finished"), gangs=True)  # gone from both: either decides
