"""The node load outlook: STL + AR with a margin calibrated on the node's own past peaks."""

from __future__ import annotations

import math

import numpy as np
import pytest

from reclaimer.forecast.seasonal import _forecast_peak, _outlook, outlook, seasonal_naive
from reclaimer.model import LoadHistory

NOW = 1_000_000 * 3600.0  # on the hour
H = 3600.0


def _history(values: list[float] | np.ndarray, end: float = NOW) -> LoadHistory:
    return LoadHistory(end - H * len(values), H, tuple(float(v) for v in values))


def _daily(days: int, noise: float = 0.0, end: float = NOW) -> np.ndarray:
    """Hourly load ending at `end`: 10% at night, 60% from 9 to 17 h, with some noise."""
    hours = np.arange(days * 24)
    clock = ((end / H) - days * 24 + hours) % 24
    base = np.where((clock >= 9) & (clock < 17), 0.6, 0.1)
    return np.clip(base + noise * np.random.default_rng(0).standard_normal(len(base)), 0, 1)


def test_a_daily_peak_ahead_is_in_the_upper_bound() -> None:
    values = _daily(16, noise=0.03)
    clock_now = (NOW / H) % 24
    horizon = ((9 - clock_now) % 24 + 2) * H  # reaches two hours into the next busy spell
    look = outlook(_history(values), NOW, horizon)
    assert look is not None and look.origins >= 20
    assert look.upper_peak >= 0.6 and look.peak == pytest.approx(0.6, abs=0.08)


def test_quiet_hours_ahead_give_a_low_bound() -> None:
    """At 18 h by this clock the next 8 hours are night: the bound stays far below the day's
    60%; the hour from 16 h is busy."""
    assert (NOW / H) % 24 == 16
    evening = NOW + 2 * H
    look = outlook(_history(_daily(16, 0.03, evening), end=evening), evening, 8 * H)
    assert look is not None and look.upper_peak < 0.3
    busy = outlook(_history(_daily(16, noise=0.03)), NOW, 1 * H)
    assert busy is not None and busy.upper_peak > 0.5


@pytest.mark.parametrize(
    ("values", "end", "why"),
    [
        pytest.param([0.1] * (14 * 24), NOW, "shorter than 14 days + horizon", id="short"),
        pytest.param([0.1] * (16 * 24), NOW - 2 * H, "ends 2 h before now", id="stale"),
        pytest.param([math.nan] * (16 * 24), NOW, "all NaN", id="no-samples"),
        pytest.param([], NOW, "empty", id="empty"),
    ],
)
def test_no_outlook_without_enough_recent_history(
    values: list[float], end: float, why: str
) -> None:
    assert outlook(_history(values, end), NOW, 8 * H) is None, why


def test_a_history_that_begins_in_nan_calibrates_only_on_origins_it_covers() -> None:
    """Nine days without samples (Prometheus installed a week ago, as the controller's 15-day
    grid reads it), then a week of load: origins whose fit window is mostly NaN are left out
    (no fit on them: statsmodels refuses an all-NaN window), the others calibrate."""
    values = [math.nan] * (9 * 24) + [0.1] * (7 * 24)
    look = outlook(_history(values), NOW, 8 * H)
    assert look is not None and look.origins == 6  # fit windows at most a quarter NaN
    assert look.upper_peak == pytest.approx(0.1, abs=0.02)
    assert outlook(_history([math.nan] * (12 * 24) + [0.1] * (4 * 24)), NOW, 8 * H) is None


def test_the_same_history_is_fitted_once_whatever_the_time_within_its_step() -> None:
    history = _history(_daily(16, noise=0.03))
    first = outlook(history, NOW, 8 * H)
    again = outlook(history, NOW + 0.5 * H, 8 * H)  # a later cycle in the same hour
    assert first is not None and again is first  # kept, not fitted again
    assert outlook(history, NOW + 1.5 * H, 8 * H) is None  # stale: not from the cache


def test_an_outlook_six_hours_later_fits_only_the_windows_it_has_not_fitted() -> None:
    """The calibration origins sit every 6 h back from the history's end, so the same grid read
    6 h later fits again all but its newest origin and its final window: those two are fitted,
    the other 26 are kept, and the outlook is exactly the one fitted from nothing."""
    values = _daily(16, noise=0.03, end=NOW + 6 * H)  # one series: the same hour, the same value
    earlier = _history(values[:-6], end=NOW)
    later = _history(values[6:], end=NOW + 6 * H)
    _forecast_peak.cache_clear()
    first = outlook(earlier, NOW, 8 * H)
    assert first is not None and first.origins == 27
    fitted = _forecast_peak.cache_info().misses
    kept = outlook(later, NOW + 6 * H, 8 * H)
    info = _forecast_peak.cache_info()
    assert (info.misses - fitted, info.hits) == (2, 26)
    _forecast_peak.cache_clear()
    _outlook.cache_clear()
    assert outlook(later, NOW + 6 * H, 8 * H) == kept


def test_seasonal_naive_takes_the_busier_of_a_day_and_a_week_ago() -> None:
    values = np.full(8 * 24 + 4, 0.1)
    values[-24] = 0.5  # a day before the first hour ahead
    values[-7 * 24 + 1] = 0.7  # a week before the second hour ahead
    out = seasonal_naive(values, 24, 2)
    assert out is not None and list(out) == [0.5, 0.7]
    assert seasonal_naive(values[:20], 24, 2) is None
