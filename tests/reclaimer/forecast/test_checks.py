"""forecast_check: idle forecasts judged against the data after their horizon."""

from __future__ import annotations

import pandas as pd
import pytest

from reclaimer.forecast.checks import GRACE, CheckResult, PendingCheck, check, remember
from reclaimer.forecast.history import History
from reclaimer.model import Forecast


def fc(job: str, idle: bool = True) -> Forecast:
    return Forecast(job, idle, 0.9, 900.0, 900.0, 0.05, "m", 100)


def frame(job: str, points: list[tuple[float, float]]) -> History:
    rows = pd.DataFrame([(job, t, v) for t, v in points], columns=["job", "timestamp", "value"])
    return History.from_frame(rows)


def test_remember_keeps_one_pending_check_per_job_and_ignores_busy_forecasts() -> None:
    p = remember((), {"a": fc("a"), "b": fc("b", idle=False)}, 0.0)
    p = remember(p, {"a": fc("a")}, 60.0)
    assert p == (PendingCheck("a", 0.0, 900.0, 0.05),)


@pytest.mark.parametrize(
    ("points", "now", "want", "still_pending"),
    [
        pytest.param(
            [(60.0 * i, 0.01) for i in range(1, 16)],
            900.0,
            [CheckResult.CORRECT],
            0,
            id="stayed-idle",
        ),
        pytest.param(
            [(60.0 * i, 0.5 if i == 7 else 0.0) for i in range(1, 16)],
            900.0,
            [CheckResult.WRONG],
            0,
            id="woke-up",
        ),
        pytest.param(
            [(60.0 * i, 0.0) for i in range(1, 10)], 600.0, [], 1, id="horizon-not-reached"
        ),
        pytest.param([], 900.0 + GRACE + 1, [], 0, id="no-data-dropped-after-grace"),
        pytest.param([], 900.0 + GRACE, [], 1, id="no-data-kept-within-grace"),
    ],
)
def test_check(points, now, want, still_pending) -> None:
    pending = (PendingCheck("a", 0.0, 900.0, 0.05),)
    left, results = check(pending, frame("a", points), now)
    assert [r for _, r in results] == want
    assert len(left) == still_pending
