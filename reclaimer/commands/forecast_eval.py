"""`gpu-reclaimer forecast-eval`: backtest every idle forecaster and baseline on a trace.

Theory of operation. The shell of `reclaimer.forecast.backtest`: it reads a utilization CSV in the
`alibaba-gentd26` format (`container_ip`, `timestamp_anon` in seconds, `value` in percent),
turns it into the forecaster's history frame (`job`, `timestamp`, `value` as a ratio), puts it
on one grid, runs the protocol with the wall clock injected, and prints a table or JSON: per
method precision, recall, GPU-hours found, cost, and calibration (Brier score, ECE and the
ten-bin reliability table, which the text output shows for the default method). Bad
input (missing file, missing columns, a duration or threshold it cannot parse) is reported in
one line on stderr with exit status 2.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import pandas as pd

from reclaimer import units as quantities
from reclaimer.commands import trace_paths
from reclaimer.forecast.backtest import MethodScore, evaluate
from reclaimer.forecast.baselines import BASELINES
from reclaimer.forecast.calibration import Bin, Calibration
from reclaimer.forecast.features import build_grid
from reclaimer.forecast.forecaster import DEFAULT_METHOD, FORECASTERS, ForecastParams
from reclaimer.simulate.trace import TraceError, read_utilization


class InputError(ValueError):
    """Input the command cannot use; the message is shown to the user as is."""


def parse_duration(text: str) -> float:
    """'15m', '900s', '1h' or '900' (seconds) -> seconds > 0."""
    try:
        seconds = quantities.parse_duration(text)
    except ValueError:
        seconds = 0.0
    if seconds <= 0:
        raise InputError(f"cannot parse duration {text!r}: use e.g. 15m, 900s or 1h")
    return seconds


def parse_percent(text: str) -> float:
    """'5' or '5%' -> 0.05; must lie in (0, 100]."""
    try:
        percent = float(text.strip().removesuffix("%"))
    except ValueError:
        percent = float("nan")
    if not 0 < percent <= 100:
        raise InputError(f"threshold {text!r} must be a percentage in (0, 100]")
    return percent / 100.0


def read_trace(path: Path) -> pd.DataFrame:
    """The trace as a history frame (job, timestamp, value ratio)."""
    try:
        return read_utilization(path)
    except TraceError as err:
        raise InputError(str(err)) from err


def format_table(scores: list[MethodScore]) -> str:
    head = (
        f"{'method':<18} {'precision':>9} {'recall':>7} {'idle GPU-h found':>17} {'ms/series':>10}"
        f" {'Brier':>6} {'ECE':>6}"
    )
    lines = [head, "-" * len(head)]
    for s in scores:
        name = s.method + (" *" if s.default else "")
        lines.append(
            f"{name:<18} {s.precision:>9.3f} {s.recall:>7.3f} "
            f"{s.idle_gpu_hours_found:>17.1f} {s.ms_per_series:>10.3f}"
            f" {s.calibration.brier:>6.3f} {s.calibration.ece:>6.3f}"
        )
    first = scores[0] if scores else None
    if first is not None:
        lines.append(
            f"{first.windows} windows, {first.idle_windows} idle; * = the controller's forecaster"
        )
    for s in scores:
        if s.default:
            lines += ["", f"calibration of {s.method}:", *reliability_table(s.calibration)]
    return "\n".join(lines)


def reliability_table(calibration: Calibration) -> list[str]:
    """One line per bin: its range, count, mean predicted P(idle) and observed idle frequency."""
    lines = [f"{'P(idle) bin':<12} {'windows':>7} {'mean predicted':>14} {'observed':>8}"]
    for b in calibration.bins:
        shown = (
            (f"{b.mean_predicted:>14.3f} {b.observed:>8.3f}") if b.count else f"{'-':>14} {'-':>8}"
        )
        lines.append(f"{b.low:.1f}-{b.high:.1f}{'':<5} {b.count:>7} {shown}")
    return lines


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--utilization",
        type=Path,
        metavar="FILE",
        help="CSV in the alibaba-gentd26 format (value in percent; default: the fetched trace)",
    )
    trace_paths.add_traces_dir(parser)
    parser.add_argument("--horizon", default="15m", help="idle window to forecast (15m, 900s, 1h)")
    parser.add_argument("--threshold", default="5", help="idle below this utilization, percent")
    parser.add_argument("--json", action="store_true", help="print JSON instead of a table")


def run(args: argparse.Namespace) -> int:
    if problem := trace_paths.fill_defaults(args, ("utilization",)):
        print(f"gpu-reclaimer forecast-eval: {problem}", file=sys.stderr)
        return 2
    try:
        params = ForecastParams(
            horizon_seconds=parse_duration(args.horizon), threshold=parse_percent(args.threshold)
        )
        history = read_trace(args.utilization)
    except InputError as err:
        print(f"gpu-reclaimer forecast-eval: {err}", file=sys.stderr)
        return 2
    ts = history["timestamp"]
    grid = build_grid(history, float(ts.max()), float(ts.max() - ts.min()) + 1.0)
    scores = evaluate(grid, {**FORECASTERS, **BASELINES}, params, DEFAULT_METHOD, time.perf_counter)
    if args.json:
        print(json.dumps([_as_json(s) for s in scores], indent=2))
    else:
        print(format_table(scores))
    return 0


def _as_json(score: MethodScore) -> dict[str, object]:
    return {
        "method": score.method,
        "default": score.default,
        "precision": round(score.precision, 4),
        "recall": round(score.recall, 4),
        "idle_gpu_hours_found": round(score.idle_gpu_hours_found, 3),
        "ms_per_series": round(score.ms_per_series, 4),
        "brier": round(score.calibration.brier, 4),
        "ece": round(score.calibration.ece, 4),
        "calibration_bins": [bin_as_json(b) for b in score.calibration.bins],
    }


def bin_as_json(b: Bin) -> dict[str, object]:
    return {
        "low": round(b.low, 2),
        "high": round(b.high, 2),
        "count": b.count,
        "mean_predicted": round(b.mean_predicted, 4),
        "observed": round(b.observed, 4),
    }
