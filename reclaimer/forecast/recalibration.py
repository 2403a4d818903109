"""Walk-forward recalibration of the pooled logistic model's probabilities (pure, no I/O).

Theory of operation. A logistic model fitted on the settled windows is sharp but, on the shared
trace, overconfident between 0.5 and 0.9, which is where `minConfidence` sits. So at every call,
before its answer is used, the model is checked forward in time on the history itself:

1. the settled windows are split at `calibration_seconds` before the newest column: a probe model
   (same features, ridge and age weights) is fitted only on the windows whose outcome was known
   before that cut, and predicts the windows after it, whose outcome it never saw;
2. those out-of-time predictions are sorted into `calibration_bins` equal-count bins; each bin's
   (age-weighted) mean prediction and observed idle frequency, made non-decreasing by pooling
   adjacent violators, are the knots of a monotone map, anchored at (0, 0) and (1, 1);
3. the full model's probabilities go through that map by linear interpolation.

No parameter is shipped: the map is refitted every call from the cluster's own recent windows,
and with too few windows on either side of the cut (or with `calibration_bins` = 0) the model's
probabilities are used as they are. The map is monotone, so the order of jobs by confidence is
kept (ties aside).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from reclaimer.forecast.features import FloatArray, Grid, samples_for
from reclaimer.forecast.logistic import fit_logistic
from reclaimer.forecast.params import ForecastParams

MIN_CALIBRATION_WINDOWS = 50


@dataclass(frozen=True)
class CalibrationMap:
    """Monotone knots: predicted probability -> observed frequency."""

    predicted: FloatArray
    observed: FloatArray

    def apply(self, probability: FloatArray) -> FloatArray:
        out: FloatArray = np.interp(probability, self.predicted, self.observed)
        return out


def pool_adjacent_violators(values: FloatArray, weights: FloatArray) -> FloatArray:
    """The non-decreasing sequence closest to `values` in weighted least squares."""
    blocks: list[list[float]] = []  # [value, weight, length]
    for v, w in zip(values.tolist(), weights.tolist(), strict=True):
        blocks.append([v, w, 1.0])
        while len(blocks) > 1 and blocks[-2][0] > blocks[-1][0]:
            v2, w2, n2 = blocks.pop()
            v1, w1, n1 = blocks[-1]
            total = w1 + w2
            mean = (v1 * w1 + v2 * w2) / total if total > 0 else (v1 + v2) / 2
            blocks[-1] = [mean, total, n1 + n2]
    return np.repeat([b[0] for b in blocks], [int(b[2]) for b in blocks]).astype(np.float64)


def binned_isotonic(
    predicted: FloatArray, outcome: FloatArray, weights: FloatArray, bins: int
) -> CalibrationMap:
    """Monotone map from equal-count bins of `predicted` to their observed frequency."""
    parts = [p for p in np.array_split(np.argsort(predicted, kind="stable"), bins) if p.size]
    w = [np.maximum(weights[p], 1e-12) for p in parts]
    mean_p = np.array(
        [np.average(predicted[p], weights=wp) for p, wp in zip(parts, w, strict=True)]
    )
    freq = np.array([np.average(outcome[p], weights=wp) for p, wp in zip(parts, w, strict=True)])
    total = np.array([wp.sum() for wp in w])
    fitted = pool_adjacent_violators(freq, total)
    return CalibrationMap(
        np.concatenate(([0.0], mean_p, [1.0])), np.concatenate(([0.0], fitted, [1.0]))
    )


def forward_map(
    x: FloatArray,
    y: FloatArray,
    weight: FloatArray,
    *,
    cols: np.ndarray,
    grid: Grid,
    params: ForecastParams,
) -> CalibrationMap | None:
    """Fit the map of steps 1-2 (module doc) from settled windows, or None without enough.

    `x` is (rows, len(cols), features), `y` and `weight` (rows, len(cols)); `cols` are the
    columns of `grid` the windows start at.
    """
    if params.calibration_bins < 1:
        return None
    horizon = samples_for(params.horizon_seconds, grid.step)
    cut = grid.columns - 1 - round(params.calibration_seconds / grid.step)
    usable = ~np.isnan(y) & ~np.isnan(x).any(axis=2)
    before = usable & (cols + horizon <= cut)[None, :]
    after = usable & (cols > cut)[None, :]
    positives = float(y[before].sum())
    minority = min(positives, float(before.sum()) - positives)
    if before.sum() < params.min_training_windows or minority < 5:
        return None
    if after.sum() < MIN_CALIBRATION_WINDOWS:
        return None
    probe = fit_logistic(x[before], y[before], weight[before], ridge=params.ridge)
    return binned_isotonic(
        probe.probability(x[after]), y[after], weight[after], params.calibration_bins
    )
