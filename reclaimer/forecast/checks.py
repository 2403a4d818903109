"""Keeping the forecaster honest: idle forecasts are remembered and checked once their horizon ends.

Pure functions over immutable data; the controller keeps the pending tuple between cycles and
hands `check` the cycle's per-job `History`.
An idle forecast made at `t` for horizon `h` is *correct* when every history point of the job in
(t, t + h] stays below the forecast's threshold, and *wrong* otherwise. It is checked only when
the data reaches t + h; one with no data at all in its window (the job was preempted, finished or
lost its series) cannot be judged and is dropped after `GRACE` seconds, uncounted. Each job has
at most one pending check, the oldest, so a job forecast idle every cycle counts once per horizon.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from enum import StrEnum

import numpy as np

from reclaimer.forecast.features import at_or_above
from reclaimer.forecast.history import History, columns_between
from reclaimer.model import Forecast

GRACE = 3600.0


class CheckResult(StrEnum):
    CORRECT = "correct"
    WRONG = "wrong"


@dataclass(frozen=True)
class PendingCheck:
    job: str
    made_at: float
    until: float
    threshold: float


def remember(
    pending: tuple[PendingCheck, ...], forecasts: Mapping[str, Forecast], now: float
) -> tuple[PendingCheck, ...]:
    """Add a check for every idle forecast whose job has none pending."""
    waiting = {p.job for p in pending}
    new = tuple(
        PendingCheck(f.job, now, now + f.horizon_seconds, f.threshold)
        for f in sorted(forecasts.values(), key=lambda f: f.job)
        if f.idle and f.job not in waiting
    )
    return pending + new


def check(
    pending: tuple[PendingCheck, ...], history: History, now: float
) -> tuple[tuple[PendingCheck, ...], tuple[tuple[str, CheckResult], ...]]:
    """Judge the checks whose window the job history covers; return (still pending, results).
    One row slice per pending check."""
    keep: list[PendingCheck] = []
    results: list[tuple[str, CheckResult]] = []
    rows = {k: i for i, k in enumerate(history.keys)}
    times = history.times()
    last = history.last_columns()
    for p in pending:
        row = rows.get(p.job, -1)
        span = columns_between(times, p.made_at, p.until)
        window = history.values[row, span] if row >= 0 else np.zeros(0, dtype=np.float32)
        window = window[~np.isnan(window)]
        covered = row >= 0 and last[row] >= 0 and float(times[last[row]]) >= p.until
        if covered and window.size:
            busy = bool(at_or_above(window, p.threshold).any())
            results.append((p.job, CheckResult.WRONG if busy else CheckResult.CORRECT))
        elif now <= p.until + GRACE:
            keep.append(p)
    return tuple(keep), tuple(results)
