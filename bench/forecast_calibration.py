"""Calibration of the idle forecasters on pods they have never seen (not a test; prints JSON).

    .venv/bin/python bench/forecast_calibration.py --utilization FILE [--resamples 1000]
        [--seed 0] [--horizon 900] [--threshold 0.05]

The pods are split once, deterministically and without looking at their data: ranked by the
SHA-256 of their id, the first third is the held-out part, the rest the training part. Every
choice about calibration (the recalibration's window and bins) was made on the training part
only; the held-out part is scored, never tuned on. Each part is run alone through
`forecast-eval`'s protocol (`reclaimer.forecast.backtest`), as a held-out file would be: the
walk-forward models learn only from that part's earlier windows.

Per part and method: windows, precision, recall, Brier score, ECE over ten equal-width bins and
the bin table. On the held-out part also the spread of the ECE over `--resamples` bootstrap
resamples of whole pods (windows of one pod are correlated), as 5th/50th/95th percentiles.
`pooled-logistic (raw)` is the default model without its recalibration (`calibration_bins=0`).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from reclaimer.commands.forecast_eval import bin_as_json, read_trace
from reclaimer.forecast.backtest import WARMUP_SECONDS, answers, origins
from reclaimer.forecast.calibration import calibrate, pod_bootstrap_ece
from reclaimer.forecast.features import Grid, build_grid
from reclaimer.forecast.forecaster import DEFAULT_METHOD, FORECASTERS, ForecastParams
from reclaimer.forecast.idle_model import BURST_RATE
from reclaimer.forecast.params import Forecaster, Prediction

TARGET_ECE = 0.05
RAW = f"{DEFAULT_METHOD} (raw)"


def held_out_pods(pods: list[str]) -> list[str]:
    """The third of `pods` with the lowest SHA-256 of their id."""
    ranked = sorted(pods, key=lambda p: hashlib.sha256(p.encode()).hexdigest())
    return sorted(ranked[: len(ranked) // 3])


def raw_default(grid: Grid, params: ForecastParams) -> Prediction:
    return FORECASTERS[DEFAULT_METHOD](grid, replace(params, calibration_bins=0))


METHODS: dict[str, Forecaster] = {
    DEFAULT_METHOD: FORECASTERS[DEFAULT_METHOD],
    RAW: raw_default,
    BURST_RATE: FORECASTERS[BURST_RATE],
}


def score_part(
    history: pd.DataFrame, pods: list[str], params: ForecastParams, bootstrap: tuple[int, int]
) -> dict[str, Any]:
    part = history[history["job"].isin(pods)]
    ts = part["timestamp"]
    grid = build_grid(part, float(ts.max()), float(ts.max() - ts.min()) + 1.0)
    found = origins(grid, params, WARMUP_SECONDS)
    pod_of = np.array(grid.jobs, dtype=object)[found.rows]
    methods: dict[str, dict[str, object]] = {}
    for name, method in METHODS.items():
        started = time.perf_counter()
        got = answers(grid, method, params, found, time.perf_counter)
        cal = calibrate(got.confidence, found.idle)
        tp = int((got.idle & found.idle).sum())
        row: dict[str, object] = {
            "precision": round(tp / max(int(got.idle.sum()), 1), 4),
            "recall": round(tp / max(int(found.idle.sum()), 1), 4),
            "brier": round(cal.brier, 4),
            "ece": round(cal.ece, 4),
            "seconds": round(time.perf_counter() - started, 1),
            "bins": [bin_as_json(b) for b in cal.bins],
        }
        resamples, seed = bootstrap
        if resamples:
            spread = pod_bootstrap_ece(got.confidence, found.idle, pod_of, resamples, seed)
            p5, p50, p95 = np.percentile(spread, [5, 50, 95])
            row["ece_bootstrap"] = {
                "resamples": resamples,
                "p5": round(float(p5), 4),
                "median": round(float(p50), 4),
                "p95": round(float(p95), 4),
                "share_above_target": round(float((spread > TARGET_ECE).mean()), 3),
            }
        methods[name] = row
    return {
        "pods": len(pods),
        "windows": int(found.rows.size),
        "idle_windows": int(found.idle.sum()),
        "methods": methods,
    }


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--utilization", required=True, type=Path)
    parser.add_argument("--resamples", type=int, default=1000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--horizon", type=float, default=900.0, help="seconds")
    parser.add_argument("--threshold", type=float, default=0.05, help="ratio")
    args = parser.parse_args(argv)
    params = ForecastParams(horizon_seconds=args.horizon, threshold=args.threshold)
    history = read_trace(args.utilization)
    pods = sorted(str(p) for p in history["job"].unique())
    held = held_out_pods(pods)
    training = [p for p in pods if p not in set(held)]
    started = time.perf_counter()
    trained_on = score_part(history, training, params, (0, args.seed))
    held_out = score_part(history, held, params, (args.resamples, args.seed))
    ece = held_out["methods"][DEFAULT_METHOD]["ece"]
    report = {
        "split": "pods ranked by sha256 of their id; the first third is held out",
        "target_ece": TARGET_ECE,
        "training": trained_on,
        "held_out": held_out,
        "held_out_default_meets_target": isinstance(ece, float) and ece <= TARGET_ECE,
        "seconds": round(time.perf_counter() - started, 1),
    }
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
