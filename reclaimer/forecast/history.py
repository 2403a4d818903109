"""Utilization history as the reclaimer keeps it: one float32 row per series on one fixed step.

Theory of operation. Prometheus answers range queries on a fixed step grid, so the history of
record is a dense matrix: row i is the series `keys[i]` (a job key, or a pod key
"namespace/pod"), column k is the time `start + k * step`, NaN where there is no sample. float32
keeps a utilization ratio to seven digits in 4 bytes: 10,000 jobs x a day at 60 s is 58 MB, where
the long (job, timestamp, value) frame it replaced held 24 bytes and a Python object per point.

`grid(now, lookback)` hands the forecaster the very `Grid` that `features.build_grid` builds from
the same points as a long frame (the same rows, columns, start and step; the values stay
float32), slicing rather than copying where it can. `from_frame` / `to_frame` convert to and from
the long frame for the callers that exchange one (CSV traces, exports, tests); both are exact for
points on the grid.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt
import pandas as pd

from reclaimer.forecast.features import Grid, StepColumns, build_grid, estimate_step

Float32Array = npt.NDArray[np.float32]
ROW_BLOCK = 1024  # rows per pass when a whole-matrix temporary would cost memory


@dataclass(frozen=True)
class History(StepColumns):
    """Values of `keys` (rows) at `start + k * step` (columns); float32, NaN = no sample."""

    keys: tuple[str, ...]
    start: float
    step: float
    values: Float32Array

    @staticmethod
    def empty(start: float, step: float, columns: int = 0) -> History:
        return History((), start, step, np.full((0, columns), np.nan, dtype=np.float32))

    def newest(self) -> float | None:
        """Time of the newest column holding any sample, or None."""
        filled = _filled_columns(self.values)
        return float(self.times()[filled[-1]]) if filled.size else None

    def last_columns(self) -> npt.NDArray[np.int64]:
        """Per row, the column of its newest sample, -1 for a row without any."""
        out = np.full(len(self.keys), -1, dtype=np.int64)
        for lo in range(0, len(self.keys), ROW_BLOCK):
            filled = ~np.isnan(self.values[lo : lo + ROW_BLOCK])
            last = self.columns - 1 - np.argmax(filled[:, ::-1], axis=1)
            out[lo : lo + ROW_BLOCK] = np.where(filled.any(axis=1), last, -1)
        return out

    def to_frame(self, key_column: str = "job") -> pd.DataFrame:
        """The long frame (key_column, timestamp, value) of the present samples, by key, time."""
        rows, cols = np.nonzero(~np.isnan(self.values))
        keys = np.array(self.keys, dtype=object)
        return pd.DataFrame(
            {
                key_column: keys[rows] if rows.size else np.array([], dtype=object),
                "timestamp": self.times()[cols],
                "value": self.values[rows, cols].astype(np.float64),
            }
        )

    @staticmethod
    def from_frame(frame: pd.DataFrame, key_column: str = "job") -> History:
        """A long frame whose timestamps lie on one step (estimated as `build_grid` does) ->
        History, keys sorted; two samples of one key in one step keep the larger value."""
        ts = frame["timestamp"].to_numpy(dtype=np.float64)
        codes, uniques = pd.factorize(frame[key_column].to_numpy(), sort=True)
        keys = tuple(str(k) for k in uniques)
        if ts.size == 0:
            return History(keys, 0.0, 60.0, np.full((len(keys), 0), np.nan, dtype=np.float32))
        step = estimate_step(codes.astype(np.int64), ts)
        start = float(ts.min())
        col = np.rint((ts - start) / step).astype(np.int64)
        values = np.full((len(keys), int(col.max()) + 1), -np.inf, dtype=np.float32)
        raw = frame["value"].to_numpy(dtype=np.float64)
        np.maximum.at(values, (codes, col), np.where(np.isnan(raw), -np.inf, raw))
        values[np.isneginf(values)] = np.nan
        return History(keys, start, step, values)

    def grid(self, now: float, lookback_seconds: float) -> Grid:
        """What `build_grid(self.to_frame(), now, lookback_seconds)` gives, from the matrix."""
        times = self.times()
        span = columns_between(times, now - lookback_seconds, now)
        window = self.values[:, span]
        rows = np.flatnonzero(_filled_rows(window))
        cols = _filled_columns(window)
        if cols.size == 0:
            return Grid((), now, 60.0, np.full((0, 0), np.nan))
        first, last = int(cols[0]), int(cols[-1])
        order = rows[np.argsort(np.array(self.keys, dtype=object)[rows], kind="stable")]
        if not _one_step_gaps(window, order, first, last):
            return build_grid(self.to_frame(), now, lookback_seconds)  # not on one step: exact
        if order.size == len(self.keys) and (order == np.arange(order.size)).all():
            values = window[:, first : last + 1]  # every row, already sorted: a view
        else:
            values = window[order, first : last + 1]
        anchor = float(times[span.start + last])
        jobs = tuple(self.keys[i] for i in order)
        return Grid(jobs, anchor - (last - first) * self.step, self.step, values)


def columns_between(times: npt.NDArray[np.float64], after: float, until: float = np.inf) -> slice:
    """The columns whose time is in (after, until], for `times` of a History or Grid."""
    lo = int(np.searchsorted(times, after, side="right"))
    return slice(lo, max(lo, int(np.searchsorted(times, until, side="right"))))


def _filled_rows(values: Float32Array) -> npt.NDArray[np.bool_]:
    out = np.zeros(values.shape[0], dtype=bool)
    for lo in range(0, values.shape[0], ROW_BLOCK):
        out[lo : lo + ROW_BLOCK] = (~np.isnan(values[lo : lo + ROW_BLOCK])).any(axis=1)
    return out


def _filled_columns(values: Float32Array) -> npt.NDArray[np.int64]:
    out = np.zeros(values.shape[1], dtype=bool)
    for lo in range(0, values.shape[0], ROW_BLOCK):
        out |= (~np.isnan(values[lo : lo + ROW_BLOCK])).any(axis=0)
    return np.flatnonzero(out)


def _one_step_gaps(values: Float32Array, rows: npt.NDArray[np.intp], first: int, last: int) -> bool:
    """Is the median gap between a row's consecutive samples one column, as `estimate_step`
    would find it on these rows (which then picks this History's own step)? A row with n
    samples has n - 1 gaps; its gaps of one column are its pairs of adjacent samples."""
    ones = total = 0
    for lo in range(0, rows.size, ROW_BLOCK):
        valid = ~np.isnan(values[rows[lo : lo + ROW_BLOCK], first : last + 1])
        ones += int((valid[:, 1:] & valid[:, :-1]).sum())
        total += int(np.maximum(valid.sum(axis=1) - 1, 0).sum())
    return total > 0 and 2 * ones > total
