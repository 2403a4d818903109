"""The walk-forward recalibration: its monotone map, when it applies, and what it keeps."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from forecast.test_forecaster import NOW, N, fleet, frame
from reclaimer.forecast.calibration import expected_calibration_error
from reclaimer.forecast.features import build_grid
from reclaimer.forecast.forecaster import ForecastParams
from reclaimer.forecast.idle_model import _assemble, _training_columns, pooled_logistic
from reclaimer.forecast.recalibration import (
    binned_isotonic,
    forward_map,
    pool_adjacent_violators,
)


@pytest.mark.parametrize(
    ("values", "weights", "expected"),
    [
        pytest.param([1.0, 3.0, 2.0, 4.0], [1, 1, 1, 1], [1.0, 2.5, 2.5, 4.0], id="one-swap"),
        pytest.param([3.0, 2.0, 1.0], [1, 1, 1], [2.0, 2.0, 2.0], id="all-down"),
        pytest.param([1.0, 0.0], [3, 1], [0.75, 0.75], id="weighted"),
        pytest.param([0.1, 0.2, 0.3], [1, 1, 1], [0.1, 0.2, 0.3], id="already-monotone"),
    ],
)
def test_pool_adjacent_violators(
    values: list[float], weights: list[float], expected: list[float]
) -> None:
    got = pool_adjacent_violators(np.array(values), np.array(weights, dtype=float))
    np.testing.assert_allclose(got, expected)


def test_binned_isotonic_undoes_an_overconfident_forecast() -> None:
    rng = np.random.default_rng(4)
    p = rng.random(100_000)
    y = (rng.random(p.size) < p**2).astype(float)  # idle far less often than claimed
    assert expected_calibration_error(p, y) > 0.1
    m = binned_isotonic(p, y, np.ones(p.size), 10)
    assert np.all(np.diff(m.observed) >= 0)
    assert (m.predicted[0], m.observed[0], m.predicted[-1], m.observed[-1]) == (0, 0, 1, 1)
    assert m.apply(np.array([0.5]))[0] == pytest.approx(0.25, abs=0.03)
    assert expected_calibration_error(m.apply(p), y) < 0.02


def _training(params: ForecastParams) -> tuple[np.ndarray, ...]:
    grid = build_grid(frame(fleet()), NOW, params.lookback_seconds)
    cols = _training_columns(grid, params)
    x, y = _assemble(grid, params, cols)
    return grid, x[:, :-1, :], y[:, :-1], np.ones(y[:, :-1].shape), cols  # type: ignore[return-value]


def test_forward_map_needs_windows_on_both_sides_of_the_cut() -> None:
    params = ForecastParams()
    grid, x, y, w, cols = _training(params)
    assert forward_map(x, y, w, cols=cols, grid=grid, params=params) is not None
    off = dataclasses.replace(params, calibration_bins=0)
    assert forward_map(x, y, w, cols=cols, grid=grid, params=off) is None
    # a cut older than the whole history leaves nothing to fit the probe model on
    assert (
        forward_map(
            x,
            y,
            w,
            cols=cols,
            grid=grid,
            params=dataclasses.replace(params, calibration_seconds=N * 60),
        )
        is None
    )


def test_recalibration_keeps_the_order_of_jobs_and_the_range() -> None:
    grid = build_grid(frame({**fleet(), "t/zero": np.zeros(N)}), NOW, 86400.0)
    params = ForecastParams()
    raw = pooled_logistic(grid, dataclasses.replace(params, calibration_bins=0)).confidence
    mapped = pooled_logistic(grid, params).confidence
    assert not np.array_equal(raw, mapped)
    assert np.all((mapped >= 0) & (mapped <= 1))
    order = np.argsort(raw, kind="stable")
    assert np.all(np.diff(mapped[order]) >= -1e-12)
