"""The float32 `History` gives the forecaster what the long frame gave: the same grid, the same
forecasts and the same plan on the shared trace as the recorded long-frame code
(`tests/fixtures/trace_plan/README.md`)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from repo_paths import FIXTURES
from tracefleet import forecast_times, outcome, trace_history

from reclaimer.forecast import history as history_module
from reclaimer.forecast import idle_model
from reclaimer.forecast.features import build_grid
from reclaimer.forecast.forecaster import ForecastParams, forecast
from reclaimer.forecast.history import History

RECORDED = FIXTURES / "trace_plan" / "gentd26.json"


@pytest.fixture(scope="module")
def trace(shared_data: Path) -> pd.DataFrame:
    return trace_history(shared_data)


@pytest.mark.slow
@pytest.mark.parametrize("kind", ["history", "frame"])
def test_trace_plan_is_the_one_the_long_frame_code_recorded(trace: pd.DataFrame, kind: str) -> None:
    history = History.from_frame(trace) if kind == "history" else trace
    jobs = sorted(trace["job"].unique())
    got = outcome(jobs, forecast_times(trace), lambda now: forecast(history, ForecastParams(), now))
    want = json.loads(RECORDED.read_text())
    assert _rounded(got["forecasts"]) == _rounded(want["forecasts"])
    assert _rounded(got["plan"]) == _rounded(want["plan"])
    assert len(want["plan"]["actions"]) >= 20  # a plan that has something to lose


def _rounded(value: object) -> object:
    """The recorded values with every number, or number written as text, to 12 significant
    digits: numpy and pandas releases sum in other orders and move the last bits of a float
    (0.037802588696878706 against ...726), which is no change of forecast or plan."""
    if isinstance(value, dict):
        return {k: _rounded(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_rounded(v) for v in value]
    if isinstance(value, bool):
        return value
    if isinstance(value, str):
        try:
            value = float(value)
        except ValueError:
            return value
    if isinstance(value, int | float):
        return f"{value:.12g}"  # text, so that NaN equals NaN
    return value


def sparse_frame(seed: int) -> pd.DataFrame:
    """Jobs on a 60 s grid with gaps, a late starter, an early leaver, a value at 0.05."""
    rng = np.random.default_rng(seed)
    rows = []
    for j in range(12):
        first, last = (0, 300) if j % 4 else (rng.integers(0, 200), 300 - rng.integers(0, 150))
        for k in range(first, last):
            if rng.random() < 0.9:
                rows.append(
                    (f"ns/j{11 - j:02d}", 1.7e9 + 60.0 * k, float(rng.choice([0.0, 0.05, 0.3])))
                )
    return pd.DataFrame(rows, columns=["job", "timestamp", "value"])


@pytest.mark.parametrize("seed", [1, 2, 3])
@pytest.mark.parametrize(
    ("now_after", "lookback"),
    [(299 * 60.0, 86400.0), (250 * 60.0 + 7, 3600.0), (100 * 60.0, 1800.0), (-60.0, 600.0)],
    ids=["all", "off-grid-now", "middle", "before-any"],
)
def test_grid_is_build_grids(seed: int, now_after: float, lookback: float) -> None:
    frame = sparse_frame(seed)
    now = 1.7e9 + now_after
    want = build_grid(frame, now, lookback)
    got = History.from_frame(frame).grid(now, lookback)
    assert (got.jobs, got.start, got.step) == (want.jobs, want.start, want.step)
    np.testing.assert_array_equal(got.values, want.values.astype(np.float32))
    if got.values.size:  # from the float32 matrix, not History.grid's fall-back to build_grid
        assert got.values.dtype == np.float32


def test_samples_two_steps_apart_grid_on_their_median_gap() -> None:
    """Worked by hand: a's gaps are 120, 120, 120, 60 s, so the step is 120 s (the median), not
    the History's 60 s. Columns run back from the newest sample (420 s), each sample in the one
    `rint((420 - t) / 120)` steps back (half to even: 3.5 -> 4, 2.5 -> 2, 1.5 -> 2, 0.5 -> 0),
    and two samples in one column keep the larger."""
    history = History((*"ab",), 0.0, 60.0, np.full((2, 8), np.nan, dtype=np.float32))
    history.values[0, [0, 2, 4, 6, 7]] = [0.1, 0.2, 0.3, 0.4, 0.5]  # a at 0, 120, 240, 360, 420
    history.values[1, 1] = 0.6  # b at 60
    got = history.grid(420.0, 1000.0)
    assert (got.jobs, got.start, got.step) == (("a", "b"), -60.0, 120.0)
    nan = np.nan
    want = np.array([[0.1, nan, 0.3, nan, 0.5], [nan, 0.6, nan, nan, nan]], dtype=np.float32)
    np.testing.assert_array_equal(got.values.astype(np.float32), want)


def test_frame_round_trip_keeps_every_sample() -> None:
    frame = sparse_frame(4)
    back = History.from_frame(frame).to_frame()
    key = ["job", "timestamp"]
    pd.testing.assert_frame_equal(
        back.sort_values(key).reset_index(drop=True),
        frame.sort_values(key)
        .reset_index(drop=True)
        .assign(
            value=frame.sort_values(key)["value"].to_numpy(dtype=np.float32).astype(np.float64)
        ),
    )


@pytest.mark.parametrize("block", [1, 7, 100_000], ids=["one-row", "seven-rows", "one-block"])
def test_row_blocks_do_not_change_forecasts(
    trace: pd.DataFrame, monkeypatch: pytest.MonkeyPatch, block: int
) -> None:
    """Features are computed in blocks of rows to bound memory; any block size, same answer."""
    history = History.from_frame(trace)
    now = forecast_times(trace)[-1]
    want = forecast(history, ForecastParams(), now)
    monkeypatch.setattr(idle_model, "ROW_BLOCK", block)
    monkeypatch.setattr(history_module, "ROW_BLOCK", block)
    assert forecast(history, ForecastParams(), now) == want
