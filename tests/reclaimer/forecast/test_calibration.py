"""Calibration scores: hand-computed cases, the known properties of ECE and Brier, bad input."""

from __future__ import annotations

import numpy as np
import pytest

from reclaimer.forecast.calibration import (
    CalibrationError,
    bin_index,
    calibrate,
    expected_calibration_error,
    pod_bootstrap_ece,
)


def test_hand_computed_small_case() -> None:
    # bins: [0, .1) holds .05 (outcome 0); [.1, .2) holds .15, .15 (outcomes 1, 0);
    # [.9, 1] holds .95 (outcome 1). ECE = (1*.05 + 2*|.15-.5| + 1*.05) / 4 = 0.2;
    # Brier = (.05^2 + .85^2 + .15^2 + .05^2) / 4 = 0.1875.
    result = calibrate([0.05, 0.15, 0.15, 0.95], [0, 1, 0, 1])
    assert result.ece == pytest.approx(0.2)
    assert result.brier == pytest.approx(0.1875)
    assert result.windows == 4
    counts = [b.count for b in result.bins]
    assert counts == [1, 2, 0, 0, 0, 0, 0, 0, 0, 1]
    second = result.bins[1]
    assert (second.low, second.high) == pytest.approx((0.1, 0.2))
    assert (second.mean_predicted, second.observed) == pytest.approx((0.15, 0.5))


def test_perfectly_calibrated_input_has_zero_ece() -> None:
    # a quarter of the 0.25 windows and three quarters of the 0.75 windows were idle
    p = [0.25] * 4 + [0.75] * 4
    y = [1, 0, 0, 0, 1, 1, 1, 0]
    assert expected_calibration_error(p, y) == pytest.approx(0.0)


def test_outcomes_drawn_from_the_probabilities_give_near_zero_ece() -> None:
    rng = np.random.default_rng(5)
    p = rng.random(200_000)
    y = (rng.random(p.size) < p).astype(float)
    assert expected_calibration_error(p, y) < 0.01
    # and the Brier score of a calibrated uniform forecast is E[p(1-p)] = 1/6
    assert calibrate(p, y).brier == pytest.approx(1 / 6, abs=0.005)


@pytest.mark.parametrize(
    ("p", "freq"),
    [pytest.param(0.9, 0.0, id="sure-and-wrong"), pytest.param(0.3, 0.6, id="too-low")],
)
def test_a_constant_forecast_has_ece_equal_to_its_error(p: float, freq: float) -> None:
    y = np.zeros(10)
    y[: round(freq * 10)] = 1.0
    result = calibrate(np.full(10, p), y)
    assert result.ece == pytest.approx(abs(p - freq))
    assert result.brier == pytest.approx(np.mean((p - y) ** 2))


def test_bin_edges_are_closed_on_the_left_and_one_is_in_the_last_bin() -> None:
    edges = np.array([0.0, 0.0999, 0.1, 0.5, 0.9, 0.99, 1.0])
    assert bin_index(edges).tolist() == [0, 0, 1, 5, 9, 9, 9]


def test_no_predictions_score_zero() -> None:
    result = calibrate([], [])
    assert (result.windows, result.ece, result.brier) == (0, 0.0, 0.0)
    assert all(b.count == 0 for b in result.bins)


@pytest.mark.parametrize(
    ("p", "y", "message"),
    [
        pytest.param([0.5, 0.5], [1], "2 probabilities but 1 outcomes", id="shapes"),
        pytest.param([1.5], [1], r"\[0, 1\]", id="above-one"),
        pytest.param([float("nan")], [1], r"\[0, 1\]", id="nan"),
        pytest.param([0.5], [2], "0 or 1", id="outcome"),
    ],
)
def test_bad_input_is_refused_with_a_message(p: list[float], y: list[int], message: str) -> None:
    with pytest.raises(CalibrationError, match=message):
        calibrate(p, y)


def test_pod_bootstrap_is_seeded_and_resamples_whole_pods() -> None:
    rng = np.random.default_rng(1)
    p = rng.random(300)
    y = (rng.random(300) < 0.5).astype(float)
    pods = np.repeat(["a", "b", "c"], 100)
    first = pod_bootstrap_ece(p, y, pods, 50, seed=3)
    assert np.array_equal(first, pod_bootstrap_ece(p, y, pods, 50, seed=3))
    # each resample is a multiset of the three pods: its ECE is one of few values
    assert len(np.unique(first.round(12))) <= 10
    one_pod = pod_bootstrap_ece(p[:100], y[:100], pods[:100], 5, seed=0)
    assert one_pod == pytest.approx(np.full(5, expected_calibration_error(p[:100], y[:100])))
