"""forecast(): idle-window forecasts on synthetic fleets, leakage, determinism, fallbacks."""

from __future__ import annotations

import dataclasses

import numpy as np
import pandas as pd
import pytest

from reclaimer.forecast.features import HistoryError
from reclaimer.forecast.forecaster import ForecastParams, forecast
from reclaimer.forecast.idle_model import BURST_RATE, POOLED_LOGISTIC

STEP = 60.0
N = 420  # 7 hours of minutes
NOW = (N - 1) * STEP


def _bursty(rng: np.random.Generator, n: int, rate: float) -> np.ndarray:
    starts = rng.random(n) < rate
    return np.where(starts | np.roll(starts, 1), rng.uniform(0.15, 0.25, n), 0.0)


def fleet(seed: int = 7, jobs: int = 24) -> dict[str, np.ndarray]:
    """Background jobs with burst rates from rare to frequent, so both outcomes occur."""
    rng = np.random.default_rng(seed)
    rates = np.linspace(0.002, 0.25, jobs)
    return {f"bg/job-{k:02d}": _bursty(rng, N, rate) for k, rate in enumerate(rates)}


def frame(series: dict[str, np.ndarray], start: dict[str, int] | None = None) -> pd.DataFrame:
    rows = []
    for job, values in series.items():
        first = (start or {}).get(job, 0)
        for i, v in enumerate(values):
            if not np.isnan(v):
                rows.append((job, (first + i) * STEP, float(v)))
    return pd.DataFrame(rows, columns=["job", "timestamp", "value"])


def periodic(every: int, width: int, n: int = N) -> np.ndarray:
    return np.array([0.2 if i % every < width else 0.0 for i in range(n)])


CASES = [
    pytest.param(np.zeros(N), 0, True, (0.85, 1.0), POOLED_LOGISTIC, id="always-zero-is-idle"),
    pytest.param(np.full(N, 0.5), 0, False, (0.0, 0.1), POOLED_LOGISTIC, id="steady-busy"),
    pytest.param(periodic(10, 2), 0, False, (0.0, 0.5), POOLED_LOGISTIC, id="burst-every-10min"),
    pytest.param(periodic(60, 3), 0, False, (0.0, 0.85), POOLED_LOGISTIC, id="burst-hourly"),
    pytest.param(
        np.r_[np.full(N - 2, 0.5), 0.0, 0.0], 0, False, (0.0, 0.5), POOLED_LOGISTIC,
        id="just-went-quiet",
    ),
    pytest.param(np.zeros(20), N - 20, False, (0.0, 0.0), "insufficient-history", id="too-short"),
    pytest.param(np.zeros(N - 30), 0, False, (0.0, 0.0), "no-recent-samples", id="went-silent"),
]  # fmt: skip


@pytest.mark.parametrize(("values", "start", "idle", "confidence", "method"), CASES)
def test_forecast_cases(
    values: np.ndarray, start: int, idle: bool, confidence: tuple[float, float], method: str
) -> None:
    series = {**fleet(), "t/case": values}
    got = forecast(frame(series, {"t/case": start}), ForecastParams(), NOW)["t/case"]
    assert got.idle is idle
    assert confidence[0] <= got.confidence <= confidence[1]
    assert got.method == method
    assert got.samples == int((~np.isnan(values)).sum())
    assert got.last_sample_at == (start + len(values) - 1) * STEP
    assert got.horizon_seconds == 900.0
    assert got.threshold == 0.05


def test_every_job_gets_a_forecast_with_sane_fields() -> None:
    series = fleet()
    got = forecast(frame(series), ForecastParams(), NOW)
    assert set(got) == set(series)
    for job, f in got.items():
        assert f.job == job
        assert 0.0 <= f.confidence <= 1.0
        assert f.idle == (f.confidence >= ForecastParams().min_confidence)
        assert f.predicted_idle_seconds >= 0.0
        busy_now = series[job][-1] >= 0.05
        assert not busy_now or f.predicted_idle_seconds == 0.0


def test_future_samples_are_ignored() -> None:
    """Leakage: whatever lies after `now` changes nothing."""
    series = {**fleet(), "t/zero": np.zeros(N)}
    cut = N - 60
    now = (cut - 1) * STEP
    future = {job: np.r_[v[:cut], np.full(N - cut, 0.9)] for job, v in series.items()}
    assert forecast(frame(series), ForecastParams(), now) == forecast(
        frame(future), ForecastParams(), now
    )


def test_deterministic_and_independent_of_row_order() -> None:
    history = frame({**fleet(), "t/zero": np.zeros(N)})
    shuffled = history.sample(frac=1.0, random_state=3).reset_index(drop=True)
    first = forecast(history, ForecastParams(), NOW)
    assert forecast(history, ForecastParams(), NOW) == first
    assert forecast(shuffled, ForecastParams(), NOW) == first


def test_raising_the_operating_point_only_removes_idle_decisions() -> None:
    history = frame(fleet(seed=11))
    low = forecast(history, ForecastParams(min_confidence=0.5), NOW)
    high = forecast(history, ForecastParams(min_confidence=0.95), NOW)
    assert {j for j, f in high.items() if f.idle} <= {j for j, f in low.items() if f.idle}
    assert all(low[j].confidence == high[j].confidence for j in low)


def test_without_settled_windows_the_burst_rate_model_answers() -> None:
    """Two hours of history at a 60-minute horizon leave too few windows to fit on."""
    series = {job: v[-120:] for job, v in fleet().items()} | {"t/zero": np.zeros(120)}
    params = ForecastParams(horizon_seconds=3600.0)
    got = forecast(frame(series), params, 119 * STEP)
    assert {f.method for f in got.values()} == {f"{BURST_RATE} (fallback)"}
    assert got["t/zero"].idle
    assert not got["bg/job-23"].idle


def test_other_steps_and_thresholds() -> None:
    """5-minute samples (as from a Prometheus range query) and a 10% threshold."""
    history = frame({**fleet(), "t/zero": np.zeros(N)})
    history["timestamp"] *= 5
    params = ForecastParams(threshold=0.3, horizon_seconds=1800.0)
    got = forecast(history, params, NOW * 5)
    assert got["t/zero"].idle
    assert all(f.threshold == 0.3 and f.horizon_seconds == 1800.0 for f in got.values())


def test_empty_and_malformed_history() -> None:
    empty = pd.DataFrame({"job": [], "timestamp": [], "value": []})
    assert forecast(empty, ForecastParams(), NOW) == {}
    with pytest.raises(HistoryError, match="value"):
        forecast(pd.DataFrame({"job": ["a"], "timestamp": [0.0]}), ForecastParams(), NOW)


def test_params_are_frozen_with_the_agreed_defaults() -> None:
    params = ForecastParams()
    assert (params.horizon_seconds, params.threshold) == (900.0, 0.05)
    with pytest.raises(dataclasses.FrozenInstanceError):
        params.threshold = 0.1  # type: ignore[misc]


@pytest.mark.parametrize("minutes", [30, 121, 179], ids=["30m", "2h", "just-under-3h"])
def test_short_history_still_forecasts_every_job(minutes: int) -> None:
    """Young clusters (jobs younger than the seasonal lags) used to raise IndexError."""
    ts = np.arange(minutes, dtype=float) * 60.0
    rows = [("a/idle", t, 0.0) for t in ts] + [("b/busy", t, 0.9) for t in ts]
    history = pd.DataFrame(rows, columns=["job", "timestamp", "value"])

    result = forecast(history, ForecastParams(), now=float(ts[-1]))

    assert set(result) == {"a/idle", "b/busy"}
    assert not result["b/busy"].idle
