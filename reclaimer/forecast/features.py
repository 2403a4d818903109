"""Utilization history as a regular grid, and the per-sample features forecasters read from it.

Theory of operation. Forecasting works on a dense matrix, not on per-series objects, so that one
numpy operation covers every job at once (10,000 jobs x a day of samples is a few million cells).
`build_grid` turns the long history frame (`job`, `timestamp`, `value`) into a `Grid`: one row
per job, one column per sampling step, anchored at the newest sample at or before `now`, with NaN
where a sample is missing. Nothing after `now` enters the grid, which is what makes a backtest
honest: a forecaster only ever sees a `Grid`.

The features are causal (column i uses columns <= i only), so the same matrices give both the
training rows of a walk-forward model (past columns, whose outcome is already known) and the row
it predicts from (the last column):

- `decayed_fraction`: exponentially weighted share of busy samples (value >= threshold), with
  missing samples carrying no weight; the recursive filter runs in C via `scipy.signal.lfilter`.
- `fleet_fraction`: the share of all series busy at each step: the pods of one service move
  together, so the fleet's load says more about the next minutes than one pod's own past does.
- `seasonal_fleet`: the fleet's busy share over the window that starts one period (an hour) ago,
  averaged over the last few periods: batch clients often run on the hour.
- `idle_run`: steps since the job was last busy (capped by its history).
- `window_idle`: the label, whether the next `h` samples are all present and all idle.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt
import pandas as pd
from scipy.signal import lfilter

FloatArray = npt.NDArray[np.float64]
AnyFloatArray = npt.NDArray[np.floating[Any]]  # a Grid over a History holds float32
BoolArray = npt.NDArray[np.bool_]

HISTORY_COLUMNS = ("job", "timestamp", "value")


class HistoryError(ValueError):
    """The history frame lacks a column the forecaster needs."""


class StepColumns:
    """Columns at times `start + k * step` of a `values` matrix (Grid, History)."""

    start: float
    step: float
    values: AnyFloatArray

    @property
    def columns(self) -> int:
        return int(self.values.shape[1])

    @property
    def end(self) -> float:
        """Time of the last column."""
        return self.start + (self.columns - 1) * self.step

    def times(self) -> FloatArray:
        return self.start + self.step * np.arange(self.columns, dtype=np.float64)


@dataclass(frozen=True)
class Grid(StepColumns):
    """Utilization of `jobs` (rows) at times `start + k * step` (columns), NaN = missing."""

    jobs: tuple[str, ...]
    start: float
    step: float
    values: AnyFloatArray

    def window(self, stop: int, length: int) -> Grid:
        """Columns [stop - length, stop): the view a forecaster gets at column stop - 1."""
        first = max(0, stop - length)
        return Grid(
            self.jobs, self.start + first * self.step, self.step, self.values[:, first:stop]
        )


def estimate_step(job_codes: npt.NDArray[np.int64], timestamps: FloatArray) -> float:
    """Median spacing of consecutive samples of the same job (seconds); 60 s when unknown."""
    order = np.lexsort((timestamps, job_codes))
    ts = timestamps[order]
    same = job_codes[order][1:] == job_codes[order][:-1]
    gaps = np.diff(ts)[same]
    gaps = gaps[gaps > 0]
    return float(np.median(gaps)) if gaps.size else 60.0


def build_grid(history: pd.DataFrame, now: float, lookback_seconds: float) -> Grid:
    """Pivot the long history onto a grid ending at the newest sample at or before `now`.

    Samples after `now` or older than `lookback_seconds` are dropped; two samples of one job in
    one step keep the larger value (a job is as busy as its busiest reading).
    """
    missing = [c for c in HISTORY_COLUMNS if c not in history.columns]
    if missing:
        raise HistoryError(f"history lacks column(s) {', '.join(missing)}")
    ts_all = history["timestamp"].to_numpy(dtype=np.float64)
    keep = (ts_all <= now) & (ts_all > now - lookback_seconds)
    values = history["value"].to_numpy(dtype=np.float64)[keep]
    ts = ts_all[keep]
    codes_raw, uniques = pd.factorize(history["job"].to_numpy()[keep], sort=True)
    codes = codes_raw.astype(np.int64)
    jobs = tuple(str(j) for j in uniques)
    if ts.size == 0:
        return Grid(jobs, now, 60.0, np.full((len(jobs), 0), np.nan))
    step = estimate_step(codes, ts)
    anchor = float(ts.max())
    back = np.rint((anchor - ts) / step).astype(np.int64)
    columns = int(back.max()) + 1
    grid = np.full((len(jobs), columns), -np.inf)
    np.maximum.at(grid, (codes, columns - 1 - back), np.where(np.isnan(values), -np.inf, values))
    grid[np.isneginf(grid)] = np.nan
    return Grid(jobs, anchor - (columns - 1) * step, step, grid)


def samples_for(seconds: float, step: float) -> int:
    """Whole samples in `seconds` (a 900 s window at 57 s steps holds 15)."""
    return max(1, math.floor(seconds / step + 1e-9))


def decayed_fraction(flags: FloatArray, valid: BoolArray, half_life: float) -> FloatArray:
    """Exponentially weighted mean of `flags` along time, ignoring missing samples.

    `half_life` is in samples. Rows without any sample yet read NaN.
    """
    alpha = 1.0 - 0.5 ** (1.0 / max(half_life, 1e-6))
    weights = valid.astype(np.float64)
    num = lfilter([alpha], [1.0, alpha - 1.0], np.where(valid, flags, 0.0), axis=-1)
    den = lfilter([alpha], [1.0, alpha - 1.0], weights, axis=-1)
    with np.errstate(invalid="ignore", divide="ignore"):
        out: FloatArray = np.where(den > 1e-12, num / np.maximum(den, 1e-300), np.nan)
    return out


def at_or_above(values: AnyFloatArray, threshold: float) -> BoolArray:
    """values >= threshold, compared in the values' own precision (a float32 history is compared
    with the threshold rounded to float32: a value equal to the threshold stays busy)."""
    out: BoolArray = values >= np.asarray(threshold, dtype=values.dtype)
    return out


def busy_flags(values: AnyFloatArray, threshold: float) -> tuple[FloatArray, BoolArray]:
    """(1.0 where the sample is at or above the threshold else 0.0, sample present)."""
    valid = ~np.isnan(values)
    busy = np.where(valid & at_or_above(np.nan_to_num(values, nan=0.0), threshold), 1.0, 0.0)
    return busy, valid


def fleet_fraction(busy: FloatArray, valid: BoolArray) -> FloatArray:
    """Share of present series that are busy, per column (0 where none is present)."""
    present = valid.sum(axis=0)
    out: FloatArray = busy.sum(axis=0) / np.maximum(present, 1)
    return out


def seasonal_fleet(fleet: FloatArray, period: int, window: int, periods: int) -> FloatArray:
    """Mean of `fleet` over columns (i - k*period, i - k*period + window], k = 1..periods.

    That is what the fleet did, one period ago, over the window now ahead. Columns with no such
    past read NaN. Requires period >= window so nothing after column i is used.
    """
    n = fleet.shape[0]
    cum = np.concatenate(([0.0], np.cumsum(fleet)))
    total = np.zeros(n)
    count = np.zeros(n)
    idx = np.arange(n)
    for k in range(1, periods + 1):
        lo = idx - k * period + 1
        ok = (lo >= 0) & (k * period >= window)
        hi = np.clip(lo + window, 0, n)
        lo_c = np.clip(lo, 0, n)
        total += np.where(ok, (cum[hi] - cum[lo_c]) / window, 0.0)
        count += ok
    with np.errstate(invalid="ignore"):
        out: FloatArray = np.where(count > 0, total / np.maximum(count, 1), np.nan)
    return out


def idle_run(busy: FloatArray, valid: BoolArray) -> FloatArray:
    """Steps since the last busy sample, or since the first sample; 0 before any sample."""
    cols = busy.shape[1]
    idx = np.broadcast_to(np.arange(cols), busy.shape)
    first = np.minimum.accumulate(np.where(valid, idx, cols), axis=1)  # cols until one is seen
    last_busy = np.maximum.accumulate(np.where(busy > 0, idx, -1), axis=1)
    run = idx - np.maximum(last_busy, first - 1)
    out: FloatArray = np.where(first < cols, run, 0).astype(np.float64)
    return out


def window_idle(busy: FloatArray, valid: BoolArray, length: int) -> FloatArray:
    """1.0 / 0.0 when columns i+1..i+length are all present and idle / present with one busy;
    NaN when a sample is missing or the window runs past the grid."""
    rows, cols = busy.shape
    zero = np.zeros((rows, 1))
    c_valid: FloatArray = np.concatenate((zero, np.cumsum(valid, axis=1, dtype=np.float64)), axis=1)
    c_busy: FloatArray = np.concatenate((zero, np.cumsum(busy, axis=1, dtype=np.float64)), axis=1)
    out = np.full((rows, cols), np.nan)
    if cols > length:
        lo = np.arange(1, cols - length + 1)  # window start column i+1 for i = 0..cols-length-1
        n_valid = c_valid[:, lo + length] - c_valid[:, lo]
        n_busy = c_busy[:, lo + length] - c_busy[:, lo]
        out[:, : cols - length] = np.where(n_valid == length, (n_busy == 0).astype(float), np.nan)
    return out
