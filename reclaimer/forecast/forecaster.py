"""Idle-window forecasts for every job: will it stay below the threshold for the next horizon?

Theory of operation. `forecast()` is pure and deterministic: it puts the last `lookback_seconds` of
history (a `reclaimer.forecast.history.History`, or a long frame) at or before `now` on a grid
(`reclaimer.forecast.features`), runs the default forecaster
(`reclaimer.forecast.idle_model.pooled_logistic`, a logistic model refitted on the windows the
history already settled, pooled over all jobs) and turns its answer into one `Forecast` per job.
The controller and the simulator consume these through `plan()`. `method` names another of
`METHODS` (every forecaster and baseline `forecast-eval` scores), so that the backtest can replay
the same plan on a baseline's answers (`simulate --forecaster`).

- `confidence` is the model's probability that every sample of the next horizon stays below the
  threshold; `idle` is `confidence >= min_confidence` (the operating point).
- A job with less than `min_history_seconds` of history, or silent for more than
  `max_silence_seconds`, is never idle; its `method` says why.
- `past_windows` / `past_idle_windows` count the job's back-to-back past horizons and the idle
  ones (`reclaimer.forecast.past_windows`): the evidence `reclaimer.forecast.wording` prints.
- `predicted_idle_seconds` is the median idle time left if the job's hazard of turning busy is
  constant: horizon * ln(0.5) / ln(confidence), 0 for a busy job, capped at the lookback.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from reclaimer.forecast.baselines import BASELINES
from reclaimer.forecast.features import Grid, at_or_above, build_grid
from reclaimer.forecast.history import History
from reclaimer.forecast.idle_model import (
    BURST_RATE,
    POOLED_LOGISTIC,
    burst_rate,
    eligible,
    pooled_logistic,
)
from reclaimer.forecast.methods import INSUFFICIENT_HISTORY, SILENT
from reclaimer.forecast.params import Forecaster, ForecastParams, Prediction
from reclaimer.forecast.past_windows import past_windows
from reclaimer.model import Forecast

__all__ = [
    "DEFAULT_METHOD",
    "FORECASTERS",
    "METHODS",
    "ForecastParams",
    "forecast",
    "forecasts_from",
]

DEFAULT_METHOD = POOLED_LOGISTIC
FORECASTERS: dict[str, Forecaster] = {POOLED_LOGISTIC: pooled_logistic, BURST_RATE: burst_rate}
# Every method `forecast-eval` scores, by name: the learned forecasters, then the baselines.
METHODS: dict[str, Forecaster] = {**FORECASTERS, **BASELINES}


def forecast(
    history: History | pd.DataFrame,
    params: ForecastParams,
    now: float,
    method: str = DEFAULT_METHOD,
) -> dict[str, Forecast]:
    """One `Forecast` per job in `history` (a `History` of jobs, or a long frame with columns
    job, timestamp, value: both give the same answer for the same points), by the forecaster
    `method` names (a key of `METHODS`); pure."""
    if isinstance(history, History):
        grid = history.grid(now, params.lookback_seconds)
    else:
        grid = build_grid(history, now, params.lookback_seconds)
    return forecasts_from(grid, METHODS[method](grid, params), params)


def predicted_idle_seconds(confidence: float, busy_now: bool, params: ForecastParams) -> float:
    if busy_now or confidence <= 0.0:
        return 0.0
    if confidence >= 1.0 - 1e-12:
        return params.lookback_seconds
    seconds = params.horizon_seconds * math.log(0.5) / math.log(confidence)
    return float(min(seconds, params.lookback_seconds))


def _why_not(grid: Grid, params: ForecastParams, row: int) -> str:
    valid = ~np.isnan(grid.values[row])
    if not valid.any():
        return INSUFFICIENT_HISTORY
    last = grid.columns - 1 - int(np.argmax(valid[::-1]))
    if (grid.columns - 1 - last) * grid.step > params.max_silence_seconds:
        return SILENT
    return INSUFFICIENT_HISTORY


def forecasts_from(
    grid: Grid, prediction: Prediction, params: ForecastParams
) -> dict[str, Forecast]:
    """Wrap a forecaster's per-row answer into `Forecast`s keyed by job."""
    ok, samples = eligible(grid, params)
    record = past_windows(grid, params.horizon_seconds, params.threshold)
    times = grid.times()
    out: dict[str, Forecast] = {}
    for row, job in enumerate(grid.jobs):
        series = grid.values[row]
        present = np.flatnonzero(~np.isnan(series))
        last_at = float(times[present[-1]]) if present.size else None
        busy_now = bool(present.size and at_or_above(series[present[-1:]], params.threshold)[0])
        confidence = float(prediction.confidence[row]) if ok[row] else 0.0
        out[job] = Forecast(
            job=job,
            idle=bool(prediction.idle[row]) and bool(ok[row]),
            confidence=confidence,
            predicted_idle_seconds=predicted_idle_seconds(confidence, busy_now, params),
            horizon_seconds=params.horizon_seconds,
            threshold=params.threshold,
            method=prediction.method if ok[row] else _why_not(grid, params, row),
            samples=int(samples[row]),
            last_sample_at=last_at,
            past_windows=int(record.windows[row]),
            past_idle_windows=int(record.idle[row]),
        )
    return out
