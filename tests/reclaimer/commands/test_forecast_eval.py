"""forecast-eval: the backtest protocol, its leakage rule, the CLI's output and exit codes."""

from __future__ import annotations

import itertools
import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from reclaimer.cli import main
from reclaimer.commands.forecast_eval import parse_duration, parse_percent, read_trace
from reclaimer.forecast.backtest import answers, evaluate, origins
from reclaimer.forecast.baselines import BASELINES
from reclaimer.forecast.features import Grid, build_grid
from reclaimer.forecast.forecaster import DEFAULT_METHOD, FORECASTERS, ForecastParams
from reclaimer.forecast.params import Prediction

NAN = float("nan")
JSON_KEYS = {
    "method",
    "default",
    "precision",
    "recall",
    "idle_gpu_hours_found",
    "ms_per_series",
    "brier",
    "ece",
    "calibration_bins",
}
BIN_KEYS = {"low", "high", "count", "mean_predicted", "observed"}


def ticking_clock() -> itertools.count[float]:
    return itertools.count(0.0, 0.001)


def bursty_grid(pods: int = 12, hours: float = 9.0, step: float = 57.0, seed: int = 3) -> Grid:
    rng = np.random.default_rng(seed)
    n = int(hours * 3600 / step)
    rates = np.linspace(0.0, 0.2, pods)[:, None]
    starts = rng.random((pods, n)) < rates
    values = np.where(starts | np.roll(starts, 1, axis=1), 0.2, 0.0)
    return Grid(tuple(f"pod-{k:02d}" for k in range(pods)), 0.0, step, values)


def trace_csv(path: Path, grid: Grid) -> Path:
    rows = [
        (100.0 * grid.values[r, c], grid.start + c * grid.step, job)
        for r, job in enumerate(grid.jobs)
        for c in range(grid.columns)
    ]
    pd.DataFrame(rows, columns=["value", "timestamp_anon", "container_ip"]).to_csv(path)
    return path


def test_origins_every_15_samples_after_warmup_skipping_incomplete_windows() -> None:
    values = np.zeros((1, 60))
    values[0, 30] = NAN
    grid = Grid(("p",), 0.0, 60.0, values)
    found = origins(grid, ForecastParams(), warmup_seconds=600.0)
    # own samples from column 10 on, every 15th: 10, 25, 41, 56; the window after 25 holds the
    # missing column 30 and the one after 56 runs past the trace
    assert found.cols.tolist() == [10, 41]
    assert found.idle.tolist() == [True, True]


def test_a_method_sees_nothing_after_the_origin() -> None:
    grid = bursty_grid()
    seen: list[tuple[float, int]] = []

    def spy(view: Grid, params: ForecastParams) -> Prediction:
        seen.append((view.end, view.columns))
        return BASELINES["last-value"](view, params)

    params = ForecastParams()
    found = origins(grid, params)
    answers(grid, spy, params, found, ticking_clock().__next__)
    ends = sorted(end for end, _ in seen)
    assert ends == sorted(grid.start + grid.step * np.unique(found.cols))
    assert all(cols <= round(params.lookback_seconds / grid.step) + 1 for _, cols in seen)


@pytest.mark.parametrize("method", [*FORECASTERS, *BASELINES])
def test_perturbing_the_future_changes_no_earlier_answer(method: str) -> None:
    grid = bursty_grid()
    params = ForecastParams()
    found = origins(grid, params)
    cut = int(np.median(found.cols))
    noisy = grid.values.copy()
    noisy[:, cut + 1 :] = np.random.default_rng(0).random(noisy[:, cut + 1 :].shape)
    clock = ticking_clock().__next__
    a = answers(grid, FORECASTERS.get(method) or BASELINES[method], params, found, clock)
    b = answers(
        Grid(grid.jobs, grid.start, grid.step, noisy),
        FORECASTERS.get(method) or BASELINES[method],
        params,
        found,
        clock,
    )
    early = found.cols <= cut
    np.testing.assert_array_equal(a.confidence[early], b.confidence[early])
    np.testing.assert_array_equal(a.idle[early], b.idle[early])


def test_scores_of_an_always_idle_rule() -> None:
    grid = bursty_grid()
    params = ForecastParams(horizon_seconds=1800.0)

    def always(view: Grid, _: ForecastParams) -> Prediction:
        n = len(view.jobs)
        return Prediction("always", np.ones(n), np.ones(n, dtype=bool))

    (score,) = evaluate(grid, {"always": always}, params, "always", ticking_clock().__next__)
    found = origins(grid, params)
    assert score.default
    assert score.recall == 1.0
    assert score.precision == pytest.approx(found.idle.mean())
    assert score.idle_gpu_hours_found == pytest.approx(found.idle.sum() * 0.5)
    assert score.ms_per_series > 0


def test_cli_json_lists_every_method_once_with_one_default(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = trace_csv(tmp_path / "trace.csv", bursty_grid())
    assert main(["forecast-eval", "--utilization", str(path), "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert [r["method"] for r in rows] == [*FORECASTERS, *BASELINES]
    assert all(set(r) == JSON_KEYS for r in rows)
    assert [r["method"] for r in rows if r["default"]] == [DEFAULT_METHOD]
    assert all(0 <= r["precision"] <= 1 and 0 <= r["recall"] <= 1 for r in rows)


def test_cli_json_reports_calibration_per_method_in_a_subprocess(tmp_path: Path) -> None:
    path = trace_csv(tmp_path / "trace.csv", bursty_grid(pods=8))
    done = subprocess.run(
        [sys.executable, "-m", "reclaimer", "forecast-eval", "--utilization", str(path), "--json"],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    rows = json.loads(done.stdout)
    windows = origins(load_grid(path), ForecastParams()).rows.size
    for row in rows:
        assert set(row) == JSON_KEYS
        bins = row["calibration_bins"]
        assert [b["low"] for b in bins] == [k / 10 for k in range(10)]
        assert all(set(b) == BIN_KEYS for b in bins)
        assert sum(b["count"] for b in bins) == windows
        assert 0.0 <= row["ece"] <= 1.0 and 0.0 <= row["brier"] <= 1.0
        # the ECE is the count-weighted gap of the bins it lists (rounded to 4 places)
        gap = sum(b["count"] * abs(b["mean_predicted"] - b["observed"]) for b in bins)
        assert row["ece"] == pytest.approx(gap / windows, abs=2e-4)
    rules = [r for r in rows if r["method"] in BASELINES]
    # a rule's confidence is 0 or 1, so it fills only the two end bins
    assert all(sum(b["count"] for b in r["calibration_bins"][1:9]) == 0 for r in rules)


def load_grid(path: Path) -> Grid:
    history = read_trace(path)
    ts = history["timestamp"]
    return build_grid(history, float(ts.max()), float(ts.max() - ts.min()) + 1.0)


def test_cli_table(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = trace_csv(tmp_path / "trace.csv.gz", bursty_grid(pods=6))
    assert main(["forecast-eval", "--utilization", str(path), "--horizon", "30m"]) == 0
    out = capsys.readouterr().out
    assert all(name in out for name in [*FORECASTERS, *BASELINES])
    assert f"{DEFAULT_METHOD} *" in out
    assert f"calibration of {DEFAULT_METHOD}:" in out
    assert "0.9-1.0" in out


@pytest.mark.parametrize(
    ("args", "message"),
    [
        pytest.param(["--utilization", "MISSING.csv"], "no such file", id="missing-file"),
        pytest.param(["--utilization", "WRONG.csv"], "container_ip", id="wrong-columns"),
        pytest.param(["--utilization", "GOOD.csv", "--horizon", "15x"], "15x", id="bad-horizon"),
        pytest.param(["--utilization", "GOOD.csv", "--threshold", "abc"], "abc", id="bad-pct"),
        pytest.param(["--utilization", "GOOD.csv", "--threshold", "0"], "(0, 100]", id="zero-pct"),
        pytest.param(["--utilization", "TEXT.csv"], "is not numeric", id="non-numeric"),
    ],
)
def test_cli_bad_input_exits_2_with_a_message(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], args: list[str], message: str
) -> None:
    trace_csv(tmp_path / "GOOD.csv", bursty_grid(pods=2, hours=1.0))
    pd.DataFrame({"pod": ["a"], "ts": [1.0], "value": [0.0]}).to_csv(tmp_path / "WRONG.csv")
    pd.DataFrame({"container_ip": ["a"], "timestamp_anon": ["x"], "value": [0.0]}).to_csv(
        tmp_path / "TEXT.csv"
    )
    argv = [str(tmp_path / a) if a.endswith(".csv") else a for a in args]
    assert main(["forecast-eval", *argv]) == 2
    err = capsys.readouterr().err
    assert message in err
    assert "Traceback" not in err


@pytest.mark.parametrize(
    ("text", "seconds"), [("15m", 900.0), ("900s", 900.0), ("1h", 3600.0), ("900", 900.0)]
)
def test_parse_duration(text: str, seconds: float) -> None:
    assert parse_duration(text) == seconds


@pytest.mark.parametrize("text", ["", "15x", "-5m", "0s", "m"])
def test_parse_duration_rejects(text: str) -> None:
    with pytest.raises(ValueError, match="duration"):
        parse_duration(text)


def test_parse_percent() -> None:
    assert parse_percent("5") == 0.05
    assert parse_percent("12.5%") == 0.125


@pytest.mark.slow
def test_default_is_not_dominated_by_any_baseline_on_real_pods(shared_data: Path) -> None:
    """On a third of the alibaba-gentd26 pods: no baseline is as good on precision and recall."""
    history = read_trace(shared_data / "alibaba-gentd26" / "pod_gpu_duty_cycle.csv.gz")
    pods = sorted(history["job"].unique())[1::3]
    history = history[history["job"].isin(pods)]
    ts = history["timestamp"]
    grid = build_grid(history, float(ts.max()), float(ts.max() - ts.min()) + 1.0)
    methods = {DEFAULT_METHOD: FORECASTERS[DEFAULT_METHOD], **BASELINES}
    scores = evaluate(grid, methods, ForecastParams(), DEFAULT_METHOD, ticking_clock().__next__)
    default, baselines = scores[0], scores[1:]
    assert default.predicted_idle > 0
    for b in baselines:
        assert not (b.precision >= default.precision and b.recall >= default.recall), b
