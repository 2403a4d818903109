"""Baseline idle forecasters the learned model has to beat: `(Grid, params) -> Prediction`.

Theory of operation. Each baseline is a rule an operator could write by hand, read off the last
columns of the grid. None of them has a probability, so `confidence` is 1.0 where the rule says
idle and 0.0 elsewhere. A missing sample in the rule's window counts against idleness.

- `last-value`: the newest sample is below the threshold.
- `max-of-last-15`: the largest of the 15 newest samples is below the threshold.
- `decayed-p95`: the 95th percentile of the last six hours, each sample weighted by
  0.5 ** (age / 1 h), is below the threshold (the strongest single-series rule we know).
- `below-10m`: every sample of the last 10 minutes is below the threshold, which is what idle
  cullers (Jupyter's, Kubeflow's) do.
"""

from __future__ import annotations

import math

import numpy as np

from reclaimer.forecast.features import AnyFloatArray, FloatArray, Grid, samples_for
from reclaimer.forecast.params import Forecaster, ForecastParams, Prediction

DECAY_HALF_LIFE_SECONDS = 3600.0
DECAY_WINDOW_SECONDS = 6 * 3600.0
QUANTILE = 0.95
CULLER_SECONDS = 600.0
LAST_N = 15


def _rule(name: str, idle: np.ndarray) -> Prediction:
    flags = np.asarray(idle, dtype=bool)
    return Prediction(name, flags.astype(np.float64), flags)


def _all_below(values: AnyFloatArray, threshold: float) -> np.ndarray:
    """Every sample present and below the threshold (False for an empty window)."""
    if values.shape[1] == 0:
        return np.zeros(values.shape[0], dtype=bool)
    below = np.nan_to_num(values, nan=np.inf) < threshold
    return np.asarray(below.all(axis=1))


def last_value(grid: Grid, params: ForecastParams) -> Prediction:
    return _rule("last-value", _all_below(grid.values[:, -1:], params.threshold))


def max_of_last(grid: Grid, params: ForecastParams) -> Prediction:
    """Max of the last 15 samples; missing ones are skipped, but at least one must be present."""
    window = grid.values[:, -LAST_N:]
    if window.shape[1] == 0:
        return _rule(f"max-of-last-{LAST_N}", np.zeros(len(grid.jobs), dtype=bool))
    present = ~np.isnan(window).all(axis=1)
    peak = np.where(np.isnan(window), -np.inf, window).max(axis=1)
    return _rule(f"max-of-last-{LAST_N}", present & (peak < params.threshold))


def weighted_quantile(values: AnyFloatArray, weights: FloatArray, q: float) -> FloatArray:
    """Row-wise weighted quantile (the smallest value whose cumulative weight reaches q)."""
    missing = np.isnan(values)
    w = np.where(missing, 0.0, np.broadcast_to(weights, values.shape))
    order = np.argsort(np.where(missing, np.inf, values), axis=1, kind="stable")
    sorted_values = np.take_along_axis(values, order, axis=1)
    cum = np.cumsum(np.take_along_axis(w, order, axis=1), axis=1)
    total = cum[:, -1:]
    pos = np.minimum((cum < q * total).sum(axis=1), values.shape[1] - 1)
    out: FloatArray = np.where(total[:, 0] > 0, sorted_values[np.arange(len(pos)), pos], np.nan)
    return out


def decayed_p95(grid: Grid, params: ForecastParams) -> Prediction:
    n = samples_for(DECAY_WINDOW_SECONDS, grid.step)
    window = grid.values[:, -n:]
    if window.shape[1] == 0:
        return _rule("decayed-p95", np.zeros(len(grid.jobs), dtype=bool))
    age = (window.shape[1] - 1 - np.arange(window.shape[1])) * grid.step
    weights = 0.5 ** (age / DECAY_HALF_LIFE_SECONDS)
    p95 = weighted_quantile(window, weights, QUANTILE)
    return _rule("decayed-p95", np.nan_to_num(p95, nan=np.inf) < params.threshold)


def below_for(grid: Grid, params: ForecastParams) -> Prediction:
    """Samples in (now - 10 min, now]: 11 at 57 s steps, 2 at 5 min steps."""
    n = max(1, math.ceil(CULLER_SECONDS / grid.step - 1e-9))
    return _rule("below-10m", _all_below(grid.values[:, -n:], params.threshold))


BASELINES: dict[str, Forecaster] = {
    "last-value": last_value,
    f"max-of-last-{LAST_N}": max_of_last,
    "decayed-p95": decayed_p95,
    "below-10m": below_for,
}
