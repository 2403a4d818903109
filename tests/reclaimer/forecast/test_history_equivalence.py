"""The float32 `History` gives the forecaster what the long frame gave: the same grid, the same
forecasts and the same plan on the shared trace, both against the recorded long-frame code on the
pods it was recorded on (`tests/fixtures/trace_plan/README.md`) and, side by side, on every pod of
whichever copy of the trace is there."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest
from repo_paths import FIXTURES, REPO
from shared_traces import pods
from tracefleet import TRACE, forecast_times, outcome, trace_history

from reclaimer.forecast import history as history_module
from reclaimer.forecast import idle_model
from reclaimer.forecast.features import build_grid
from reclaimer.forecast.forecaster import ForecastParams, forecast
from reclaimer.forecast.history import History

RECORDED = FIXTURES / "trace_plan" / "gentd26.json"


@pytest.fixture(scope="module")
def trace(shared_data: Path) -> pd.DataFrame:
    return trace_history(shared_data)


@pytest.fixture(scope="module")
def recorded(shared_data: Path) -> tuple[dict[str, Any], pd.DataFrame]:
    """The recorded answer, and the trace's rows of the pods it was recorded on (the publisher's
    file holds them all, beside others; a cut may not)."""
    want = json.loads(RECORDED.read_text())
    if lacking := sorted(set(want["pods"]) - set(pods(shared_data / TRACE))):
        pytest.skip(
            f"{shared_data / TRACE} lacks {len(lacking)} of the {len(want['pods'])} pods "
            f"{RECORDED.name} was recorded on ({', '.join(lacking[:3])}, ...)"
        )
    return want, trace_history(shared_data, want["pods"])


@pytest.mark.slow
@pytest.mark.parametrize("kind", ["history", "frame"])
def test_trace_plan_is_the_one_the_long_frame_code_recorded(
    recorded: tuple[dict[str, Any], pd.DataFrame], kind: str
) -> None:
    want, trace = recorded
    history = History.from_frame(trace) if kind == "history" else trace
    jobs = sorted(trace["job"].unique())
    assert len(jobs) == len(want["pods"])  # no two recorded pods share a job key
    got = outcome(jobs, forecast_times(trace), lambda now: forecast(history, ForecastParams(), now))
    assert _rounded(got["forecasts"]) == _rounded(want["forecasts"])
    assert _rounded(got["plan"]) == _rounded(want["plan"])
    assert len(want["plan"]["actions"]) >= 20  # a plan that has something to lose


@pytest.mark.slow
def test_history_and_long_frame_decide_alike_on_every_pod_there(trace: pd.DataFrame) -> None:
    jobs, times = sorted(trace["job"].unique()), forecast_times(trace)
    history = History.from_frame(trace)
    got = outcome(jobs, times, lambda now: forecast(history, ForecastParams(), now))
    want = outcome(jobs, times, lambda now: forecast(trace, ForecastParams(), now))
    assert _rounded(got) == _rounded(want)
    last = want["forecasts"][repr(times[-1])]
    assert len(last) == len(jobs)  # every pod forecast, not an empty answer on both sides
    assert {f[1] for f in last.values()} == {"True", "False"}  # idle and busy pods alike
    assert want["plan"]["actions"]  # a plan that has something to lose


@pytest.mark.slow
def test_the_recorder_writes_the_recorded_answer_again_from_the_copy_there(
    shared_data: Path, tmp_path: Path
) -> None:
    """`record.py` on the traces there: the recorded answer where they hold the recorded pods,
    else exit 2 naming how many they lack, and nothing written."""
    want = json.loads(RECORDED.read_text())
    out = tmp_path / RECORDED.name
    done = subprocess.run(
        [sys.executable, str(RECORDED.parent / "record.py"), "--data", str(shared_data),
         "--out", str(out)],
        cwd=REPO, capture_output=True, text=True, timeout=600, check=False,
    )  # fmt: skip
    if lacking := set(want["pods"]) - set(pods(shared_data / TRACE)):
        assert done.returncode == 2
        assert f"lacks {len(lacking)} of the {len(want['pods'])} pods" in done.stderr
        assert not out.exists()
        return
    assert done.returncode == 0, done.stderr
    got = json.loads(out.read_text())
    assert got["pods"] == want["pods"]
    assert _rounded(got) == _rounded(want)


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
