"""Walk-forward backtest of idle-window forecasters on a utilization trace (pure, no I/O).

Theory of operation (the protocol of `gpu-reclaimer forecast-eval`):

- The whole trace is put on one grid. For every job, origins are every `origin_every` of its own
  samples, starting at its first sample with `warmup_seconds` (6 h) of history behind it.
- The window of an origin is the samples with timestamp in (origin, origin + horizon]; at the
  trace's step that is floor(horizon / step) samples. A window is idle when every one of them is
  below the threshold, and is skipped when any of them is missing.
- At each distinct origin time a method gets the grid cut at that column (and no more than its
  lookback), so it sees every job's data up to the origin and nothing after it; learned methods
  refit on what they see. Every job on that grid is forecast; only jobs with an origin there are
  scored.
- precision = TP / predicted idle, recall = TP / idle windows; `idle_gpu_hours_found` is the sum
  over true-positive windows of the window length (one GPU per series: the GPU-hours a reclaimer
  acting on those forecasts would have freed without harm); `ms_per_series` is the method's
  wall time divided by the number of series it forecast (the `clock` is injected).
- Calibration (`reclaimer.forecast.calibration`): the Brier score and the expected calibration
  error of the method's `confidence` against the windows' outcomes, over ten equal-width bins.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass

import numpy as np

from reclaimer.forecast.calibration import Calibration, calibrate
from reclaimer.forecast.features import BoolArray, Grid, busy_flags, samples_for, window_idle
from reclaimer.forecast.params import Forecaster, ForecastParams

WARMUP_SECONDS = 6 * 3600.0
ORIGIN_EVERY = 15


@dataclass(frozen=True)
class Origins:
    """Scored (job row, column) pairs and whether each window was idle."""

    rows: np.ndarray
    cols: np.ndarray
    idle: BoolArray


@dataclass(frozen=True)
class MethodScore:
    method: str
    default: bool
    windows: int
    predicted_idle: int
    true_positives: int
    idle_windows: int
    idle_gpu_hours_found: float
    ms_per_series: float
    calibration: Calibration

    @property
    def precision(self) -> float:
        return self.true_positives / self.predicted_idle if self.predicted_idle else 0.0

    @property
    def recall(self) -> float:
        return self.true_positives / self.idle_windows if self.idle_windows else 0.0


def origins(
    grid: Grid,
    params: ForecastParams,
    warmup_seconds: float = WARMUP_SECONDS,
    every: int = ORIGIN_EVERY,
) -> Origins:
    busy, valid = busy_flags(grid.values, params.threshold)
    labels = window_idle(busy, valid, samples_for(params.horizon_seconds, grid.step))
    rows: list[int] = []
    cols: list[int] = []
    for row in range(len(grid.jobs)):
        present = np.flatnonzero(valid[row])
        if present.size == 0:
            continue
        grown = present[(present - present[0]) * grid.step >= warmup_seconds - 1e-9]
        for col in grown[::every]:
            if not np.isnan(labels[row, col]):
                rows.append(row)
                cols.append(int(col))
    r, c = np.array(rows, dtype=np.int64), np.array(cols, dtype=np.int64)
    return Origins(r, c, labels[r, c] > 0.5)


@dataclass(frozen=True)
class Answers:
    """One method's answers at every scored origin, and its cost."""

    idle: BoolArray
    confidence: np.ndarray
    seconds: float
    series: int


def answers(
    grid: Grid,
    method: Forecaster,
    params: ForecastParams,
    found: Origins,
    clock: Callable[[], float],
) -> Answers:
    """Call `method` once per distinct origin column on the grid cut there (and to its lookback)."""
    lookback = max(1, round(params.lookback_seconds / grid.step) + 1)
    idle = np.zeros(found.rows.size, dtype=bool)
    confidence = np.zeros(found.rows.size)
    elapsed, series = 0.0, 0
    for col in np.unique(found.cols):
        view = grid.window(int(col) + 1, lookback)
        started = clock()
        answer = method(view, params)
        elapsed += clock() - started
        series += int((~np.isnan(view.values)).any(axis=1).sum())
        at = found.cols == col
        idle[at] = answer.idle[found.rows[at]]
        confidence[at] = answer.confidence[found.rows[at]]
    return Answers(idle, confidence, elapsed, series)


def evaluate(
    grid: Grid,
    methods: Mapping[str, Forecaster],
    params: ForecastParams,
    default: str,
    clock: Callable[[], float],
    *,
    warmup_seconds: float = WARMUP_SECONDS,
) -> list[MethodScore]:
    """Score every method (name -> forecaster) under the protocol above, in the order given."""
    found = origins(grid, params, warmup_seconds)
    scores = []
    for name, method in methods.items():
        got = answers(grid, method, params, found, clock)
        tp = int((got.idle & found.idle).sum())
        scores.append(
            MethodScore(
                method=name,
                default=name == default,
                windows=int(found.rows.size),
                predicted_idle=int(got.idle.sum()),
                true_positives=tp,
                idle_windows=int(found.idle.sum()),
                idle_gpu_hours_found=tp * params.horizon_seconds / 3600.0,
                ms_per_series=1000.0 * got.seconds / max(got.series, 1),
                calibration=calibrate(got.confidence, found.idle),
            )
        )
    return scores
