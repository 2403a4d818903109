"""Settings of the idle-window forecasters and the shape of what each one answers.

Theory of operation. Every forecaster, learned or baseline, is a pure function
`(Grid, ForecastParams) -> Prediction` that answers for every row of the grid at its last column:
the backtest runs them all through one protocol, and `forecast()` wraps the default one into
`Forecast`s. Durations are seconds; the threshold is a utilization ratio. What a policy decides
(horizon, threshold, minConfidence) comes from it through `for_policy`, the one conversion the
controller and the replay both use; its defaults are the policy's.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace

import numpy as np
import numpy.typing as npt

from reclaimer.forecast.features import Grid
from reclaimer.policy.settings import Policy

_POLICY = Policy()


@dataclass(frozen=True)
class ForecastParams:
    horizon_seconds: float = _POLICY.horizon_seconds
    threshold: float = _POLICY.threshold  # ratio: a sample below it is idle
    min_confidence: float = _POLICY.min_confidence  # idle when P(idle horizon) >= this
    min_history_seconds: float = 3600.0  # less history than this: no idle decision
    max_silence_seconds: float = 600.0  # newest sample older than this: no idle decision
    lookback_seconds: float = 86400.0  # history the forecaster reads
    half_lives_seconds: tuple[float, ...] = (900.0, 3600.0, 10800.0)
    fleet_half_lives_seconds: tuple[float, ...] = (100.0, 450.0, 3600.0)
    load_cycle_seconds: float = 3600.0  # fleet load that repeats hourly
    seasons: int = 3
    train_stride_seconds: float = 180.0
    train_half_life_seconds: float = 4 * 3600.0  # older settled windows weigh less
    max_training_rows: int = 200_000
    min_training_windows: int = 50
    ridge: float = 1.0
    calibration_seconds: float = 2 * 3600.0  # newest settled windows that check the model
    calibration_bins: int = 10  # 0: use the logistic model's probabilities as they are


def for_policy(policy: Policy, base: ForecastParams | None = None) -> ForecastParams:
    """The forecaster's settings under `policy`: its horizon, threshold and minConfidence."""
    return replace(
        base or ForecastParams(),
        horizon_seconds=policy.horizon_seconds,
        threshold=policy.threshold,
        min_confidence=policy.min_confidence,
    )


@dataclass(frozen=True)
class Prediction:
    """Answers for each grid row: P(whole horizon idle) and the decision at the operating point."""

    method: str
    confidence: npt.NDArray[np.float64]
    idle: npt.NDArray[np.bool_]


Forecaster = Callable[[Grid, ForecastParams], Prediction]
