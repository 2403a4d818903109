"""How a forecast's probability is printed: never 1.00 or 0.00, always with its evidence."""

from __future__ import annotations

import dataclasses

import numpy as np
import pandas as pd
import pytest

from reclaimer.forecast.features import Grid
from reclaimer.forecast.forecaster import ForecastParams, forecast
from reclaimer.forecast.methods import INSUFFICIENT_HISTORY, SILENT
from reclaimer.forecast.past_windows import past_windows
from reclaimer.forecast.wording import odds_text, probability_text
from reclaimer.model import Forecast

BASE = Forecast(
    job="ns/job",
    idle=True,
    confidence=0.87,
    predicted_idle_seconds=600.0,
    horizon_seconds=900.0,
    threshold=0.05,
    method="pooled-logistic",
    samples=1441,
    past_windows=96,
    past_idle_windows=80,
)


@pytest.mark.parametrize(
    ("p", "text"),
    [
        (1.0, ">0.99"),
        (0.996, ">0.99"),
        (0.9949, "0.99"),
        (0.5, "0.50"),
        (0.0051, "0.01"),
        (0.0049, "<0.01"),
        (0.0, "<0.01"),
        (float("nan"), "unknown"),
    ],
)
def test_probability_text_boundaries(p: float, text: str) -> None:
    assert probability_text(p) == text


def test_no_probability_reads_as_certain() -> None:
    for p in np.linspace(0.0, 1.0, 100_001):
        assert probability_text(float(p)) not in {"1.00", "0.00", "1", "0"}


PL = "pooled-logistic"
ODDS = [
    pytest.param({}, f"p_idle=0.87 ({PL}; idle in 80/96 past 15m windows)", id="plain"),
    pytest.param(
        {"confidence": 0.9999, "past_idle_windows": 96},
        f"p_idle>0.99 ({PL}; idle in 96/96 past 15m windows)",
        id="near-one",
    ),
    pytest.param(
        {"confidence": 1e-9, "past_idle_windows": 0},
        f"p_idle<0.01 ({PL}; idle in 0/96 past 15m windows)",
        id="near-zero",
    ),
    pytest.param(
        {"past_windows": 0, "past_idle_windows": 0},
        f"p_idle=0.87 ({PL}; no complete past 15m window)",
        id="no-window",
    ),
    pytest.param(
        {"confidence": 1.0, "method": "allocation", "samples": 0},
        "p_idle>0.99 (allocation; no history read)",
        id="assumed",
    ),
    pytest.param(
        {"confidence": 0.0, "method": INSUFFICIENT_HISTORY, "samples": 40},
        "no idle forecast (insufficient-history; 40 samples)",
        id="too-short",
    ),
    pytest.param(
        {"confidence": 0.0, "method": SILENT, "samples": 900},
        "no idle forecast (no-recent-samples; 900 samples)",
        id="silent",
    ),
]


@pytest.mark.parametrize(("change", "text"), ODDS)
def test_odds_text(change: dict[str, object], text: str) -> None:
    assert odds_text(dataclasses.replace(BASE, **change)) == text  # type: ignore[arg-type]


def test_past_windows_count_back_to_back_horizons_from_the_newest_column() -> None:
    nan = float("nan")
    # 3-sample windows ending at the last column: the first column is left over
    values = np.array(
        [
            [0.9, 0.0, 0.0, 0.0, 0.0, 0.2, 0.0, 0.0, 0.0, 0.0],  # idle, busy, idle
            [0.0, 0.0, 0.0, nan, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0],  # incomplete, idle, idle
            [nan] * 10,
        ]
    )
    grid = Grid(("a", "b", "c"), 0.0, 300.0, values)
    counted = past_windows(grid, 900.0, 0.05)
    assert counted.windows.tolist() == [3, 2, 0]
    assert counted.idle.tolist() == [2, 2, 0]
    short = past_windows(Grid(("a",), 0.0, 300.0, values[:1, :2]), 900.0, 0.05)
    assert short.windows.tolist() == [0] and short.idle.tolist() == [0]


def test_a_day_of_idle_minutes_reads_as_96_of_96_windows_and_never_as_certain() -> None:
    step, n = 57.0, 1441  # the shared trace's sampling: a day is 96 windows of 15 minutes
    rng = np.random.default_rng(2)
    series = {"quiet/job": np.zeros(n)}
    for k in range(12):
        starts = rng.random(n) < 0.02 * (k + 1)
        series[f"bg/job-{k}"] = np.where(starts | np.roll(starts, 1), 0.2, 0.0)
    history = pd.DataFrame(
        [(job, i * step, float(v)) for job, vs in series.items() for i, v in enumerate(vs)],
        columns=["job", "timestamp", "value"],
    )
    result = forecast(history, ForecastParams(), (n - 1) * step)["quiet/job"]
    assert (result.past_windows, result.past_idle_windows) == (96, 96)
    text = odds_text(result)
    assert "idle in 96/96 past 15m windows" in text
    assert "1.00" not in text and "0.00" not in text
