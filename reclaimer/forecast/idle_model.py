"""The learned idle-window forecaster: a pooled logistic model refitted walk-forward every call.

Theory of operation. At each call the history itself is the training set. Every past column whose
next horizon is already on the grid is a settled window (idle or not); a stride of them, pooled
over all jobs, gives up to `max_training_rows` (features, outcome) pairs, and a ridge logistic
regression fitted on them maps the features of the last column to a probability that the whole
coming horizon stays below the threshold. Nothing after `now` exists on the grid, so the model
learns only from earlier windows; it refits as load shifts, and needs no shipped parameters.
Features (see `reclaimer.forecast.features`): the job's decayed busy share at three half-lives, the
fleet's decayed busy share at two, what the fleet did one hour ago over the window now ahead, and
how long the job has been idle. The fleet terms are what beat single-series baselines: pods of one
service move together. Its probabilities then go through a monotone map that a probe model, fitted
without the newest two hours of windows, earns on those hours (`reclaimer.forecast.recalibration`),
so that a confidence of 0.85 is idle about 85% of the time.

When the history holds too few settled windows (or only one outcome), the `burst-rate` model
answers instead: bursts start as a Poisson process whose rate is the job's decayed rate of
idle-to-busy transitions, so P(idle horizon) = exp(-rate * horizon) for an idle job.
"""

from __future__ import annotations

import math
from collections.abc import Iterator

import numpy as np

from reclaimer.forecast.features import (
    BoolArray,
    FloatArray,
    Grid,
    busy_flags,
    decayed_fraction,
    idle_run,
    samples_for,
    seasonal_fleet,
    window_idle,
)
from reclaimer.forecast.logistic import fit_logistic
from reclaimer.forecast.params import ForecastParams, Prediction
from reclaimer.forecast.recalibration import forward_map

POOLED_LOGISTIC = "pooled-logistic"
BURST_RATE = "burst-rate"
ROW_BLOCK = 256  # jobs per block: bounds the memory of the per-job feature matrices


def eligible(grid: Grid, params: ForecastParams) -> tuple[BoolArray, FloatArray]:
    """(job has enough recent history for an idle decision, its sample count)."""
    valid = ~np.isnan(grid.values)
    samples = valid.sum(axis=1).astype(np.float64)
    if grid.columns == 0:
        return np.zeros(len(grid.jobs), dtype=bool), samples
    first = np.argmax(valid, axis=1)
    last = grid.columns - 1 - np.argmax(valid[:, ::-1], axis=1)
    span = (last - first) * grid.step
    silence = (grid.columns - 1 - last) * grid.step
    ok = valid.any(axis=1) & (span >= params.min_history_seconds - 1e-9)
    ok &= silence <= params.max_silence_seconds
    return ok, samples


def _row_blocks(grid: Grid, threshold: float) -> Iterator[tuple[int, FloatArray, BoolArray]]:
    """(first row, busy flags, presence) of each block of `ROW_BLOCK` rows: the per-job
    matrices never exist for the whole fleet at once."""
    for lo in range(0, len(grid.jobs), ROW_BLOCK):
        busy, valid = busy_flags(grid.values[lo : lo + ROW_BLOCK], threshold)
        yield lo, busy, valid


def _fleet_share(grid: Grid, threshold: float) -> FloatArray:
    """`fleet_fraction` of the whole grid, summed block by block (sums of 0/1: exact)."""
    busy_n = np.zeros(grid.columns)
    present_n = np.zeros(grid.columns, dtype=np.int64)
    for _, busy, valid in _row_blocks(grid, threshold):
        busy_n += busy.sum(axis=0)
        present_n += valid.sum(axis=0)
    out: FloatArray = busy_n / np.maximum(present_n, 1)
    return out


def _fleet_features(grid: Grid, p: ForecastParams) -> FloatArray:
    """Column-level features, shape (columns, k): log decayed fleet busy share and seasonal."""
    fleet = _fleet_share(grid, p.threshold)
    present = np.ones((1, fleet.shape[0]), dtype=bool)
    decayed = [
        decayed_fraction(fleet[None, :], present, hl / grid.step)[0]
        for hl in p.fleet_half_lives_seconds
    ]
    horizon = samples_for(p.horizon_seconds, grid.step)
    period = max(horizon, round(p.load_cycle_seconds / grid.step))
    seasonal = seasonal_fleet(fleet, period, horizon, p.seasons)
    seasonal = np.where(np.isnan(seasonal), decayed[-1], seasonal)
    return np.log(np.stack([*decayed, seasonal], axis=1) + 0.002)


def _job_features(
    busy: FloatArray, valid: BoolArray, cols: np.ndarray, grid: Grid, p: ForecastParams
) -> FloatArray:
    """Per-job features at `cols`, shape (rows, len(cols), k)."""
    parts = [
        np.log(decayed_fraction(busy, valid, hl / grid.step)[:, cols] + 0.005)
        for hl in p.half_lives_seconds
    ]
    run = np.maximum(idle_run(busy, valid)[:, cols], 0) * grid.step / p.horizon_seconds
    parts.append(np.log1p(np.minimum(run, 96.0)))
    return np.stack(parts, axis=2)


def _training_columns(grid: Grid, p: ForecastParams) -> np.ndarray:
    horizon = samples_for(p.horizon_seconds, grid.step)
    newest = grid.columns - 1 - horizon
    if newest < 0:
        return np.zeros(0, dtype=np.int64)
    stride = samples_for(p.train_stride_seconds, grid.step)
    per_column_budget = max(1, p.max_training_rows // max(1, len(grid.jobs)))
    stride = max(stride, math.ceil((newest + 1) / per_column_budget))
    return np.arange(newest, -1, -stride, dtype=np.int64)[::-1]


def _assemble(grid: Grid, p: ForecastParams, cols: np.ndarray) -> tuple[FloatArray, FloatArray]:
    """(features at train columns + the last column, labels at train columns), by row blocks."""
    fleet = _fleet_features(grid, p)
    at = np.append(cols, grid.columns - 1)
    horizon = samples_for(p.horizon_seconds, grid.step)
    min_samples = samples_for(p.min_history_seconds, grid.step)
    blocks_x, blocks_y = [], []
    for _, busy, valid in _row_blocks(grid, p.threshold):
        job = _job_features(busy, valid, at, grid, p)
        col = np.broadcast_to(fleet[at][None, :, :], (job.shape[0], *fleet[at].shape))
        blocks_x.append(np.concatenate((job, col), axis=2))
        labels = window_idle(busy, valid, horizon)[:, at]
        seen = np.cumsum(valid, axis=1)[:, at]
        labels[:, -1] = np.nan  # the last column is what we predict, not a training window
        blocks_y.append(np.where(seen >= min_samples, labels, np.nan))
    return np.concatenate(blocks_x, axis=0), np.concatenate(blocks_y, axis=0)


def pooled_logistic(grid: Grid, params: ForecastParams) -> Prediction:
    """Walk-forward pooled logistic model; falls back to `burst_rate` without enough windows."""
    ok, _ = eligible(grid, params)
    if grid.columns == 0 or not ok.any():
        return Prediction(POOLED_LOGISTIC, np.zeros(len(grid.jobs)), np.zeros_like(ok))
    cols = _training_columns(grid, params)
    x, y = _assemble(grid, params, cols)
    train_x, train_y = x[:, :-1, :].reshape(-1, x.shape[2]), y[:, :-1].reshape(-1)
    age = (grid.columns - 1 - cols) * grid.step
    weight = np.broadcast_to(0.5 ** (age / params.train_half_life_seconds), y[:, :-1].shape)
    keep = ~np.isnan(train_y) & ~np.isnan(train_x).any(axis=1)
    positives = float(train_y[keep].sum())
    minority = min(positives, float(keep.sum()) - positives)
    if keep.sum() < params.min_training_windows or minority < 5:
        fallback = burst_rate(grid, params)
        return Prediction(f"{BURST_RATE} (fallback)", fallback.confidence, fallback.idle)
    model = fit_logistic(train_x[keep], train_y[keep], weight.reshape(-1)[keep], ridge=params.ridge)
    now_x = x[:, -1, :]
    usable = ~np.isnan(now_x).any(axis=1)
    confidence = np.zeros(len(grid.jobs))
    confidence[usable] = model.probability(now_x[usable])
    check = forward_map(x[:, :-1, :], y[:, :-1], weight, cols=cols, grid=grid, params=params)
    if check is not None:
        confidence[usable] = check.apply(confidence[usable])
    idle = ok & usable & (confidence >= params.min_confidence)
    return Prediction(POOLED_LOGISTIC, confidence, idle)


def burst_rate(grid: Grid, params: ForecastParams) -> Prediction:
    """P(idle horizon) = exp(-rate * horizon) for a job idle now; rate = decayed burst starts."""
    ok, _ = eligible(grid, params)
    if grid.columns == 0:
        return Prediction(BURST_RATE, np.zeros(len(grid.jobs)), ok)
    hl = params.half_lives_seconds[len(params.half_lives_seconds) // 2] / grid.step
    horizon = samples_for(params.horizon_seconds, grid.step)
    confidence = np.zeros(len(grid.jobs))
    for lo, busy, valid in _row_blocks(grid, params.threshold):
        starts = np.zeros_like(busy)
        starts[:, 1:] = busy[:, 1:] * (1.0 - busy[:, :-1])
        rate = decayed_fraction(starts, valid, hl)[:, -1]
        idle_now = valid[:, -1] & (busy[:, -1] == 0)
        confidence[lo : lo + len(busy)] = np.where(
            idle_now & ~np.isnan(rate), np.exp(-np.nan_to_num(rate) * horizon), 0.0
        )
    return Prediction(BURST_RATE, confidence, ok & (confidence >= params.min_confidence))
