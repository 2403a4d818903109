"""The grid, the causal features and the logistic fit the idle forecaster is built from."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
import statsmodels.api as sm
from hypothesis import given, settings
from hypothesis import strategies as st

from reclaimer.forecast.baselines import weighted_quantile
from reclaimer.forecast.features import (
    build_grid,
    busy_flags,
    decayed_fraction,
    idle_run,
    samples_for,
    seasonal_fleet,
    window_idle,
)
from reclaimer.forecast.logistic import fit_logistic

NAN = float("nan")


def test_build_grid_anchors_at_the_newest_sample_and_keeps_the_larger_duplicate() -> None:
    history = pd.DataFrame(
        {
            "job": ["b", "a", "a", "a", "a", "a", "b"],
            "timestamp": [100.0, 0.0, 60.0, 60.0, 180.0, 240.0, 9999.0],
            "value": [0.3, 0.1, 0.2, 0.4, 0.0, 0.0, 1.0],
        }
    )
    grid = build_grid(history, now=300.0, lookback_seconds=1000.0)
    assert grid.jobs == ("a", "b")
    assert grid.step == 60.0
    assert grid.end == 240.0  # the sample at 9999 is after now
    np.testing.assert_array_equal(grid.values[0], [0.1, 0.4, NAN, 0.0, 0.0])
    np.testing.assert_array_equal(grid.values[1], [NAN, NAN, 0.3, NAN, NAN])  # 100 s -> 120 s


def test_build_grid_drops_what_is_older_than_the_lookback() -> None:
    history = pd.DataFrame({"job": ["a"] * 5, "timestamp": [0.0, 60, 120, 180, 240], "value": 0.0})
    grid = build_grid(history, now=240.0, lookback_seconds=130.0)
    assert (grid.start, grid.columns) == (120.0, 3)


@pytest.mark.parametrize(
    ("row", "want"),
    [
        pytest.param([0, 0, 0, 0, 0, 0], [1, 1, 1, NAN, NAN, NAN], id="all-idle"),
        pytest.param([0, 0, 0.5, 0, 0, 0], [0, 0, 1, NAN, NAN, NAN], id="one-burst"),
        pytest.param([0, NAN, 0, 0, 0, 0], [NAN, 1, 1, NAN, NAN, NAN], id="missing-sample"),
        pytest.param([0.05, 0.049, 0, 0, 0, 0.05], [1, 1, 0, NAN, NAN, NAN], id="threshold-busy"),
    ],
)
def test_window_idle_labels(row: list[float], want: list[float]) -> None:
    busy, valid = busy_flags(np.array([row], dtype=float), 0.05)
    np.testing.assert_array_equal(window_idle(busy, valid, 3)[0], want)


@pytest.mark.parametrize(
    ("seconds", "step", "want"),
    [(900, 57, 15), (900, 60, 15), (900, 300, 3), (600, 57, 10), (60, 300, 1)],
)
def test_samples_for(seconds: float, step: float, want: int) -> None:
    assert samples_for(seconds, step) == want


def test_decayed_fraction_ignores_missing_samples() -> None:
    flags = np.array([[1.0, 0.0, 1.0, 0.0]])
    with_gap = np.array([[1.0, 0.0, 0.0, 1.0, 0.0]])
    valid = np.array([[True, True, False, True, True]])
    a = decayed_fraction(flags, np.ones_like(flags, dtype=bool), 2.0)
    b = decayed_fraction(with_gap, valid, 2.0)
    assert b[0, -1] == pytest.approx(a[0, -1])
    assert np.isnan(decayed_fraction(flags, np.zeros_like(flags, dtype=bool), 2.0)).all()


def test_idle_run_counts_steps_since_the_last_busy_sample() -> None:
    busy, valid = busy_flags(np.array([[NAN, 0, 0.2, 0, NAN, 0]]), 0.05)
    np.testing.assert_array_equal(idle_run(busy, valid)[0, 1:], [1, 0, 1, 2, 3])


def test_seasonal_fleet_reads_one_period_back() -> None:
    fleet = np.arange(12, dtype=float)
    got = seasonal_fleet(fleet, period=4, window=2, periods=1)
    assert np.isnan(got[:3]).all()
    assert got[3] == pytest.approx((0 + 1) / 2)  # columns 0..1, i.e. (3-4, 3-4+2]
    assert got[7] == pytest.approx((4 + 5) / 2)


def _causal_features(grid: np.ndarray) -> tuple[np.ndarray, ...]:
    busy, valid = busy_flags(grid, 0.05)
    return decayed_fraction(busy, valid, 3.0), idle_run(busy, valid)


@settings(max_examples=40, deadline=None)
@given(
    values=st.lists(st.one_of(st.none(), st.floats(0, 1)), min_size=8, max_size=40),
    cut=st.integers(1, 7),
    noise=st.floats(0, 1),
)
def test_features_are_causal(values: list[float | None], cut: int, noise: float) -> None:
    """Changing columns from `cut` on changes no feature before `cut`."""
    row = np.array([NAN if v is None else v for v in values])[None, :]
    changed = row.copy()
    changed[:, cut:] = noise
    for a, b in zip(_causal_features(row), _causal_features(changed), strict=True):
        np.testing.assert_array_equal(a[:, :cut], b[:, :cut])


def test_weighted_quantile_matches_numpy_with_equal_weights() -> None:
    rng = np.random.default_rng(1)
    values = rng.random((5, 21))
    got = weighted_quantile(values, np.ones(21), 0.95)
    np.testing.assert_allclose(got, np.quantile(values, 0.95, axis=1, method="inverted_cdf"))


def test_logistic_fit_matches_statsmodels_glm() -> None:
    """Without a ridge, the IRLS fit is the maximum-likelihood GLM (statsmodels as reference)."""
    rng = np.random.default_rng(5)
    x = rng.normal(size=(2000, 3)) * [1.0, 3.0, 0.2] + [0.0, 5.0, -1.0]
    truth = 1 / (1 + np.exp(-(0.5 + x @ [1.0, -0.4, 2.0])))
    y = (rng.random(2000) < truth).astype(float)
    model = fit_logistic(x, y, ridge=0.0)
    reference = sm.GLM(y, sm.add_constant(x), family=sm.families.Binomial()).fit()
    np.testing.assert_allclose(
        model.probability(x), reference.predict(sm.add_constant(x)), rtol=1e-6
    )
