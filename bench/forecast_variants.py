"""Candidate job features for the pooled logistic model, tried by `forecast_ensemble_bound.py`.

Each `with_*` function has the signature of `idle_model._job_features` (busy flags and presence
of one row block, the columns to read, the grid, the params) and returns the default features
with more appended. In the bench a fold has far fewer pods than `idle_model.ROW_BLOCK`, so one
block is the whole fold and a "pooled" statistic below is pooled over all the fold's pods.

- `survival`: the idle run's survival as a hazard rather than a line. For each past column t
  whose next horizon is settled, a pod idle for r samples at t (r binned on a log2 scale; busy
  now is bin 0) is one trial of "this run lasts r + horizon": its outcome is the window label at
  t. Summing trials and successes per bin, each weighted by 0.5 ** (age / half-life), gives a
  Kaplan-Meier-style conditional survival P(idle horizon | idle for r) that follows the load
  (the fleet's nights differ from its days). A trial at t settles at t + horizon, so the estimate
  read at column c uses trials up to c - horizon only: no training row sees its own outcome. The
  feature is the logit of the pooled estimate (pseudo-counts toward one half); `survival-pod`
  adds the pod's own estimate shrunk toward the pooled one by `POD_PSEUDO` pseudo-trials
  (empirical Bayes), and `survival-pod-only` uses that one alone.
- `shapes`: nonlinear transforms of what the model already reads: indicators of the idle run's
  log2 bin, indicators of the 1 h decayed busy share in bands, and the idle run times the
  fleet's decayed busy share (a long idle run means less when the fleet is busy).
- `bursts`: busy onsets per hour in the last 1 h and 3 h, and the log of the time since the last
  onset.
"""

from __future__ import annotations

import numpy as np
from scipy.signal import lfilter

from reclaimer.forecast import idle_model
from reclaimer.forecast.features import (
    BoolArray,
    FloatArray,
    Grid,
    decayed_fraction,
    fleet_fraction,
    idle_run,
    samples_for,
    window_idle,
)
from reclaimer.forecast.params import ForecastParams

BASE = idle_model._job_features
RUN_BINS = 10  # bin 0: busy now; bin k: idle for [2^(k-1), 2^k) samples; the last is open
POOLED_PSEUDO = 1.0  # pseudo-trials toward 1/2 in the pooled estimate
POD_PSEUDO = 10.0  # pseudo-trials toward the pooled estimate in a pod's own
SURVIVAL_HALF_LIFE_SECONDS = 4 * 3600.0


def run_bins(run: FloatArray) -> np.ndarray:
    """Log2 bin of an idle run length in samples (0 for busy now)."""
    safe = np.maximum(run, 1.0)
    return np.where(run < 1, 0, np.minimum(1 + np.floor(np.log2(safe)), RUN_BINS - 1)).astype(int)


def _decayed_sums(x: FloatArray, half_life: float) -> FloatArray:
    """sum over s <= t of 0.5 ** ((t - s) / half_life) * x[..., s], along the last axis."""
    d = 0.5 ** (1.0 / max(half_life, 1e-6))
    out: FloatArray = lfilter([1.0], [1.0, -d], x, axis=-1)
    return out


def _shift(x: FloatArray, by: int) -> FloatArray:
    """x[..., c - by] at column c (0 before the first): what was settled `by` columns ago."""
    out = np.zeros_like(x)
    if by < x.shape[-1]:
        out[..., by:] = x[..., : x.shape[-1] - by]
    return out


def survival_estimates(
    busy: FloatArray, valid: BoolArray, grid: Grid, p: ForecastParams
) -> tuple[FloatArray, FloatArray]:
    """(pooled, pod-shrunk) P(idle horizon | the job's current idle run), shape (rows, columns)."""
    horizon = samples_for(p.horizon_seconds, grid.step)
    label = window_idle(busy, valid, horizon)
    known = ~np.isnan(label)
    bins = run_bins(idle_run(busy, valid))
    hl = SURVIVAL_HALF_LIFE_SECONDS / grid.step
    pooled = np.zeros(busy.shape)
    pod = np.zeros(busy.shape)
    for b in range(RUN_BINS):
        trial = (known & (bins == b)).astype(np.float64)
        success = np.where(trial > 0, np.nan_to_num(label), 0.0)
        n = _shift(_decayed_sums(trial, hl), horizon)
        y = _shift(_decayed_sums(success, hl), horizon)
        q_pool = (y.sum(axis=0) + 0.5 * POOLED_PSEUDO) / (n.sum(axis=0) + POOLED_PSEUDO)
        q_pod = (y + POD_PSEUDO * q_pool[None, :]) / (n + POD_PSEUDO)
        here = bins == b
        pooled = np.where(here, q_pool[None, :], pooled)
        pod = np.where(here, q_pod, pod)
    return pooled, pod


def _logit(q: FloatArray) -> FloatArray:
    q = np.clip(q, 1e-3, 1 - 1e-3)
    out: FloatArray = np.log(q / (1 - q))
    return out


def _append(base: FloatArray, extra: list[FloatArray]) -> FloatArray:
    return np.concatenate((base, np.stack(extra, axis=2)), axis=2)


def with_survival(busy, valid, cols, grid, p):  # type: ignore[no-untyped-def]
    pooled, _ = survival_estimates(busy, valid, grid, p)
    return _append(BASE(busy, valid, cols, grid, p), [_logit(pooled[:, cols])])


def with_survival_pod(busy, valid, cols, grid, p):  # type: ignore[no-untyped-def]
    pooled, pod = survival_estimates(busy, valid, grid, p)
    extra = [_logit(pooled[:, cols]), _logit(pod[:, cols])]
    return _append(BASE(busy, valid, cols, grid, p), extra)


def with_survival_pod_only(busy, valid, cols, grid, p):  # type: ignore[no-untyped-def]
    _, pod = survival_estimates(busy, valid, grid, p)
    return _append(BASE(busy, valid, cols, grid, p), [_logit(pod[:, cols])])


def run_bin_features(
    busy: FloatArray, valid: BoolArray, cols: np.ndarray, grid: Grid, p: ForecastParams
) -> list[FloatArray]:
    bins = run_bins(idle_run(busy, valid)[:, cols])
    return [(bins == b).astype(np.float64) for b in range(1, RUN_BINS)]


def share_band_features(
    busy: FloatArray, valid: BoolArray, cols: np.ndarray, grid: Grid, p: ForecastParams
) -> list[FloatArray]:
    share = decayed_fraction(busy, valid, 3600.0 / grid.step)[:, cols]
    return [(share < cut).astype(np.float64) for cut in (0.005, 0.02, 0.05, 0.1, 0.2, 0.4)]


def cross_features(
    busy: FloatArray, valid: BoolArray, cols: np.ndarray, grid: Grid, p: ForecastParams
) -> list[FloatArray]:
    run = idle_run(busy, valid)[:, cols]
    fleet = fleet_fraction(busy, valid)[None, :]
    fleet_share = decayed_fraction(fleet, np.ones_like(fleet, dtype=bool), 450.0 / grid.step)
    log_run = np.log1p(np.minimum(run * grid.step / p.horizon_seconds, 96.0))
    return [log_run * np.log(fleet_share[:, cols] + 0.002)]


def _with(*parts):  # type: ignore[no-untyped-def]
    """Job features: the default's, then each of `parts`' lists."""

    def features(busy, valid, cols, grid, p):  # type: ignore[no-untyped-def]
        extra = [f for part in parts for f in part(busy, valid, cols, grid, p)]
        return _append(BASE(busy, valid, cols, grid, p), extra)

    return features


with_shapes = _with(run_bin_features, share_band_features, cross_features)
with_run_bins = _with(run_bin_features)
with_share_bands = _with(share_band_features)
with_cross = _with(cross_features)


def burst_features(
    busy: FloatArray, valid: BoolArray, cols: np.ndarray, grid: Grid, p: ForecastParams
) -> list[FloatArray]:
    onset = np.zeros_like(busy)
    onset[:, 1:] = busy[:, 1:] * (1.0 - busy[:, :-1])
    cum = np.concatenate((np.zeros((busy.shape[0], 1)), np.cumsum(onset, axis=1)), axis=1)
    extra = []
    for hours in (1.0, 3.0):
        n = samples_for(hours * 3600.0, grid.step)
        lo = np.maximum(cols + 1 - n, 0)
        extra.append(np.log((cum[:, cols + 1] - cum[:, lo]) / hours + 0.1))
    idx = np.arange(busy.shape[1])
    last = np.maximum.accumulate(np.where(onset > 0, idx, -1), axis=1)[:, cols]
    since = np.where(last >= 0, cols - last, cols + 1) * grid.step / p.horizon_seconds
    extra.append(np.log1p(np.minimum(since, 96.0)))
    return extra


with_bursts = _with(burst_features)


def survival_pod_features(
    busy: FloatArray, valid: BoolArray, cols: np.ndarray, grid: Grid, p: ForecastParams
) -> list[FloatArray]:
    pooled, pod = survival_estimates(busy, valid, grid, p)
    return [_logit(pooled[:, cols]), _logit(pod[:, cols])]


with_all = _with(survival_pod_features, cross_features, burst_features)
