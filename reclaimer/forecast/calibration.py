"""How far a forecaster's probabilities are from the frequencies they claim (pure, no I/O).

Theory of operation. A probability forecaster is calibrated when, among the windows it gave
probability p of staying idle, about a fraction p did. Two numbers summarise it:

- the Brier score, the mean squared difference between the probability and the 0/1 outcome
  (lower is better; it mixes calibration with sharpness);
- the expected calibration error (ECE): the predictions are put in `BINS` equal-width bins of
  predicted probability ([0, 0.1), [0.1, 0.2), ..., [0.9, 1.0], the last one closed), and the ECE
  is the count-weighted mean, over the bins, of |mean prediction - observed frequency|.

`calibrate` returns both and the per-bin table; `pod_bootstrap_ece` resamples whole pods with
replacement (windows of one pod are correlated, so resampling windows would understate the spread)
and returns the ECE of each resample, seeded.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

BINS = 10

FloatArray = npt.NDArray[np.float64]


class CalibrationError(ValueError):
    """Probabilities and outcomes that cannot be scored (shapes differ, values out of range)."""


@dataclass(frozen=True)
class Bin:
    """Predictions in [low, high): how many, their mean, and how often the window was idle."""

    low: float
    high: float
    count: int
    mean_predicted: float
    observed: float


@dataclass(frozen=True)
class Calibration:
    windows: int
    brier: float
    ece: float
    bins: tuple[Bin, ...]


def bin_index(probability: FloatArray, bins: int = BINS) -> npt.NDArray[np.int64]:
    """Bin of each probability: floor(p * bins), with p = 1 in the last bin."""
    out: npt.NDArray[np.int64] = np.minimum(np.floor(probability * bins), bins - 1).astype(np.int64)
    return out


def _checked(probability: npt.ArrayLike, outcome: npt.ArrayLike) -> tuple[FloatArray, FloatArray]:
    p = np.asarray(probability, dtype=np.float64).reshape(-1)
    y = np.asarray(outcome, dtype=np.float64).reshape(-1)
    if p.shape != y.shape:
        raise CalibrationError(f"{p.size} probabilities but {y.size} outcomes")
    if np.isnan(p).any() or (p < 0).any() or (p > 1).any():
        raise CalibrationError("probabilities must lie in [0, 1]")
    if not np.isin(y, (0.0, 1.0)).all():
        raise CalibrationError("outcomes must be 0 or 1")
    return p, y


def calibrate(probability: npt.ArrayLike, outcome: npt.ArrayLike, bins: int = BINS) -> Calibration:
    """Brier score, ECE and the per-bin table of `probability` against 0/1 `outcome`.

    With no predictions at all both scores are 0 and every bin is empty.
    """
    p, y = _checked(probability, outcome)
    index = bin_index(p, bins)
    count = np.bincount(index, minlength=bins)
    total_p = np.bincount(index, weights=p, minlength=bins)
    total_y = np.bincount(index, weights=y, minlength=bins)
    shown = np.maximum(count, 1)
    mean_p, freq = total_p / shown, total_y / shown
    ece = float(np.sum(count * np.abs(mean_p - freq)) / p.size) if p.size else 0.0
    brier = float(np.mean((p - y) ** 2)) if p.size else 0.0
    table = tuple(
        Bin(k / bins, (k + 1) / bins, int(count[k]), float(mean_p[k]), float(freq[k]))
        for k in range(bins)
    )
    return Calibration(windows=int(p.size), brier=brier, ece=ece, bins=table)


def expected_calibration_error(
    probability: npt.ArrayLike, outcome: npt.ArrayLike, bins: int = BINS
) -> float:
    return calibrate(probability, outcome, bins).ece


def pod_bootstrap_ece(
    probability: npt.ArrayLike,
    outcome: npt.ArrayLike,
    pod: npt.ArrayLike,
    resamples: int,
    seed: int,
) -> FloatArray:
    """ECE of `resamples` resamples that draw whole pods with replacement (seeded)."""
    p, y = _checked(probability, outcome)
    codes = np.unique(np.asarray(pod).reshape(-1), return_inverse=True)[1]
    if codes.size != p.size:
        raise CalibrationError(f"{codes.size} pod labels but {p.size} probabilities")
    pods = int(codes.max()) + 1 if codes.size else 0
    members = [np.flatnonzero(codes == k) for k in range(pods)]
    rng = np.random.default_rng(seed)
    out = np.zeros(resamples)
    for r in range(resamples):
        drawn = rng.integers(0, pods, size=pods) if pods else np.zeros(0, dtype=np.int64)
        rows = np.concatenate([members[k] for k in drawn]) if pods else np.zeros(0, np.int64)
        out[r] = calibrate(p[rows], y[rows]).ece
    return out
