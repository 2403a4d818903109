"""The evidence behind a forecast: how many of the job's past horizons were idle (pure).

Theory of operation. A probability read off a model says nothing about how much data it rests
on, so every forecast also carries a plain count an operator can check by eye: the job's history
on the grid is cut into back-to-back windows of one horizon, the newest ending at the grid's last
column, and a window counts when every sample in it is present; it is idle when every one of
them is below the threshold (the same rule as the label the forecaster learns from). A day of
57-second samples holds 96 windows of 15 minutes.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from reclaimer.forecast.features import Grid, samples_for

IntArray = npt.NDArray[np.int64]


@dataclass(frozen=True)
class PastWindows:
    """Per grid row: complete past windows of one horizon, and how many of them were idle."""

    windows: IntArray
    idle: IntArray


def past_windows(grid: Grid, horizon_seconds: float, threshold: float) -> PastWindows:
    """Count each row's complete back-to-back horizons and its idle ones (see module doc)."""
    rows = len(grid.jobs)
    length = samples_for(horizon_seconds, grid.step)
    count = grid.columns // length
    if count == 0:
        zero = np.zeros(rows, dtype=np.int64)
        return PastWindows(zero, zero.copy())
    tail = grid.values[:, grid.columns - count * length :].reshape(rows, count, length)
    complete = ~np.isnan(tail).any(axis=2)
    below = (np.nan_to_num(tail, nan=np.inf) < threshold).all(axis=2)
    windows: IntArray = complete.sum(axis=1).astype(np.int64)
    idle: IntArray = (complete & below).sum(axis=1).astype(np.int64)
    return PastWindows(windows, idle)
