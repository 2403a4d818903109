"""Warnings before a stop, replayed: the stop comes at the first tick a warning period after the
warning, the guaranteed job waits that much longer, and a job that turns busy within its warning
is not stopped (counted as a warning withdrawn)."""

from __future__ import annotations

import pytest
from simworld import BURSTY, HOUR, P, run

from reclaimer.policy.settings import load_policy
from reclaimer.simulate.jobs import Event, EventKind
from reclaimer.simulate.strategies import Strategy

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
