"""Forecast of a node's load over hours: will it stay low while the pods a raise adds run?

Pure (no I/O, no clock): the history and `now` are handed in. The load is a node's mean GPU
utilization (`model.LoadHistory`, evenly spaced, hourly from the controller). The point forecast
is statsmodels' STL with a daily period, its remainder forecast by an AR(2) (`STLForecast`), fit
on the last `fit_days`. The upper bound is that forecast's peak over the horizon plus the
`quantile` of how far the actual peak overshot the forecast peak at past origins of the node's own
history (every `origin_every` over the last `calibration_days`, each fit on the `fit_days` before
it): the same protocol the bench scores, so the bound is calibrated on the node itself, not on a
trace. The raise gate (`reclaimer.plan.raises`) reads the upper peak.

Chosen on helios-philly (73 days, per minute; `bench/seasonal_bench.py`, docs/forecasting.md)
against persistence and the seasonal-naive rules (same hour one day / one week back, and their
maximum): STL + AR's mean absolute error is a third of seasonal-naive's at 1-8 h, and its upper
peak is 0.04-0.07 lower at about the same miss rate, so it allows more raises for the same risk.
`seasonal_naive` (the maximum of both seasons) is kept as the baseline the bench measures against.
"""

from __future__ import annotations

import functools
import math
import warnings
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt
import pandas as pd

from reclaimer.model import LoadHistory

DAY = 86400.0
WEEK = 7 * DAY

Array = npt.NDArray[np.float64]


@dataclass(frozen=True)
class LoadOutlook:
    """The forecast over one horizon: its peak point and upper values, and what it rests on."""

    peak: float  # highest point forecast over the horizon, ratio 0..1
    upper_peak: float  # highest upper bound over the horizon (point + error quantile)
    margin: float  # the peak error quantile added, measured on the node's own recent history
    origins: int  # past origins the margin was measured on


def seasonal_naive(values: Array, steps_per_day: int, ahead: int) -> Array | None:
    """Point forecasts for the `ahead` steps after `values` (NaN where both seasons lack data);
    None when the history is shorter than one day plus the horizon."""
    n = len(values)
    if steps_per_day <= 0 or n < steps_per_day + ahead:
        return None
    week = 7 * steps_per_day
    out = np.full(ahead, np.nan)
    for i in range(ahead):
        t = n + i
        day = values[t - steps_per_day] if t - steps_per_day < n else np.nan
        wk = values[t - week] if n >= week + ahead else np.nan
        out[i] = np.nanmax([day, wk]) if not (math.isnan(day) and math.isnan(wk)) else np.nan
    return out


def stl_ar_forecast(values: Array, steps_per_day: int, ahead: int) -> Array:
    """statsmodels' STL (daily period) with an AR(2) on the remainder: `ahead` point forecasts.
    NaN gaps are filled by interpolation first (STL takes none)."""
    # Imported on first use: statsmodels takes 1.4 s to import, and every command that plans
    # (simulate, explain, each `run --once`) would pay it even when no node asks for a raise.
    from statsmodels.tsa.ar_model import AutoReg  # noqa: PLC0415
    from statsmodels.tsa.forecasting.stl import STLForecast  # noqa: PLC0415

    filled = pd.Series(values).interpolate(limit_direction="both").to_numpy(dtype=np.float64)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # convergence chatter on flat series
        model = STLForecast(filled, AutoReg, model_kwargs={"lags": 2}, period=steps_per_day)
        return np.asarray(model.fit().forecast(ahead), dtype=np.float64)


@functools.lru_cache(maxsize=8192)
def _forecast_peak(window: bytes, steps_per_day: int, ahead: int) -> float:
    """The highest of `stl_ar_forecast`'s points after a fit window (its float64 bytes), kept.

    A pure function of the window's exact values, so a kept answer is the one a new fit would
    give. It pays because the calibration origins sit at fixed offsets from the history's end
    (every `origin_every`): a history read `origin_every` later, on the same hourly grid, fits
    again all but one of the windows it fitted then (an hour already over keeps its value), so
    a node whose outlook is read every hour needs about two new fits an hour instead of 29.
    """
    window_values = np.frombuffer(window, dtype=np.float64)
    return float(np.nanmax(stl_ar_forecast(window_values, steps_per_day, ahead)))


@dataclass(frozen=True)
class SeasonalParams:
    """How the outlook is fitted and calibrated (the values `bench/seasonal_bench.py` chose)."""

    fit_days: float = 7.0  # each fit sees this much history
    calibration_days: float = 7.0  # origins this far back calibrate the upper margin
    origin_every: float = 6 * 3600.0
    min_origins: int = 4
    quantile: float = 0.9

    @property
    def history_days(self) -> float:
        """History the outlook needs (plus one horizon)."""
        return self.fit_days + self.calibration_days


DEFAULT_PARAMS = SeasonalParams()


def _too_sparse(window: Array) -> bool:
    """More than a quarter of a fit window without samples: no fit on it."""
    return bool(np.isnan(window).mean() > 0.25)


def outlook(
    history: LoadHistory, now: float, horizon: float, params: SeasonalParams = DEFAULT_PARAMS
) -> LoadOutlook | None:
    """The load's outlook for `horizon` seconds after `now`, or None when the history cannot
    give one: not ending within a step of `now`, shorter than `fit_days` + `calibration_days` +
    one horizon, or NaN over more than a quarter of the fit window. A calibration origin counts
    only where its own fit window passes that rule too, and its horizon holds a sample (a history
    that begins in NaN, as the controller reads it in the days after Prometheus was installed,
    calibrates on the origins its samples cover, and gives no outlook before `min_origins`)."""
    if history.step <= 0 or not history.values or now - history.end > history.step:
        return None
    return _outlook(history, horizon, params)


@functools.lru_cache(maxsize=1024)
def _outlook(history: LoadHistory, horizon: float, params: SeasonalParams) -> LoadOutlook | None:
    """`outlook` once the history is known fresh: it depends on nothing else, so it is kept
    (a node's hourly history stays the same all hour, and the replay plans every 5 minutes;
    each call is up to 29 STL + AR fits, most of them kept from earlier hours: `_forecast_peak`)."""
    step = history.step
    per_day = round(DAY / step)
    ahead = max(1, math.ceil(horizon / step))
    fit = round(params.fit_days * per_day)
    values = np.asarray(history.values, dtype=np.float64)
    if per_day < 2 or len(values) < fit or _too_sparse(values[-fit:]):
        return None
    every = max(1, round(params.origin_every / step))
    back = round(params.calibration_days * per_day)
    if len(values) < fit + back + ahead:  # every calibration origin needs its own fit window
        return None
    origins = [o for o in range(len(values) - ahead, len(values) - back - 1, -every) if o >= fit]
    if len(origins) < params.min_origins:
        return None
    misses = []
    for o in origins:
        actual = values[o : o + ahead]
        if not np.all(np.isnan(actual)) and not _too_sparse(values[o - fit : o]):
            peak = _forecast_peak(values[o - fit : o].tobytes(), per_day, ahead)
            misses.append(float(np.nanmax(actual)) - peak)
    if len(misses) < params.min_origins:
        return None
    margin = max(0.0, float(np.quantile(misses, params.quantile)))
    peak = _forecast_peak(values[-fit:].tobytes(), per_day, ahead)
    return LoadOutlook(peak, min(1.0, max(0.0, peak + margin)), margin, len(misses))
