"""Rolling-origin evaluation of node-load forecasts for the raise gate (not a test).

    .venv/bin/python bench/seasonal_bench.py [--file helios-philly CSV] [--every 12]
        [--fit-days 28] [--quantile 0.9] [--json]

`--file` defaults to the helios-philly file `gpu-reclaimer traces fetch` stores (its folder:
`$GPU_RECLAIM_TRACES`, else the user's cache folder).

The load is helios-philly's busy share of nodes (`active / total`), averaged per hour. Origins
run every `--every` hours from day `--fit-days + 1` on; at each origin every method forecasts the
next 1-8 hours from the hours before it only. The first half of the origins calibrates each
method's upper bound (point + the `--quantile` of its own errors at that horizon); the second half
is scored: MAE of the hourly point forecast at each horizon, and for the gate's question (the
peak over the next H hours) the miss rate of the upper peak (actual peak above it; the target is
1 - quantile) and the mean upper peak (lower is tighter: more raises allowed at the same miss
rate). Methods: persistence (the last hour), seasonal-naive day, week, and max(day, week) (the
gate's rule, `reclaimer.forecast.seasonal`), statsmodels Holt-Winters (additive trend, damped,
weekly additive season, fit on the last `--fit-days`) and STL + AR(2) (daily STL, then an AR on
the remainder, `STLForecast`).
"""

from __future__ import annotations

import argparse
import json
import os
import time
import warnings
from collections.abc import Callable
from pathlib import Path

import numpy as np
import numpy.typing as npt
import pandas as pd
from statsmodels.tsa.ar_model import AutoReg
from statsmodels.tsa.forecasting.stl import STLForecast
from statsmodels.tsa.holtwinters import ExponentialSmoothing

from reclaimer.forecast.seasonal import SeasonalParams, outlook, seasonal_naive
from reclaimer.model import LoadHistory
from reclaimer.traces.catalog import Role, default_cache_dir

Array = npt.NDArray[np.float64]
Method = Callable[[Array, int], Array]
DATA = default_cache_dir(os.environ, Path.home()) / Role.NODE_SEQUENCE.value
HORIZONS = tuple(range(1, 9))
DAY = 24


def hourly_load(path: Path) -> Array:
    d = pd.read_csv(path, parse_dates=["time"])
    share = (d["active"] / d["total"]).to_numpy(dtype=np.float64)
    series = pd.Series(share, index=d["time"]).resample("1h").mean()
    return series.interpolate(limit_direction="both").to_numpy(dtype=np.float64)


def persistence(y: Array, ahead: int) -> Array:
    return np.full(ahead, y[-1])


def snaive(lag: int) -> Method:
    def method(y: Array, ahead: int) -> Array:
        return np.array([y[len(y) + i - lag] for i in range(ahead)])

    return method


def snaive_max(y: Array, ahead: int) -> Array:
    out = seasonal_naive(y, DAY, ahead)
    assert out is not None
    return out


def holt_winters(fit_hours: int) -> Method:
    def method(y: Array, ahead: int) -> Array:
        model = ExponentialSmoothing(
            y[-fit_hours:], trend="add", damped_trend=True, seasonal="add", seasonal_periods=168
        )
        return np.asarray(model.fit().forecast(ahead), dtype=np.float64)

    return method


def stl_ar(fit_hours: int) -> Method:
    def method(y: Array, ahead: int) -> Array:
        model = STLForecast(y[-fit_hours:], AutoReg, model_kwargs={"lags": 2}, period=DAY)
        return np.asarray(model.fit().forecast(ahead), dtype=np.float64)

    return method


def evaluate(y: Array, methods: dict[str, Method], every: int, first: int, q: float) -> dict:
    origins = list(range(first, len(y) - max(HORIZONS), every))
    h = max(HORIZONS)
    out: dict[str, dict] = {}
    for name, method in methods.items():
        started = time.process_time()
        preds = np.array([method(y[:o], h) for o in origins])
        actual = np.array([y[o : o + h] for o in origins])
        cpu = time.process_time() - started
        half = len(origins) // 2
        err = actual - preds
        row: dict[str, object] = {"cpu_s": round(cpu, 2), "origins_scored": len(origins) - half}
        for k in HORIZONS:
            margin = float(np.quantile(err[:half, :k], q))  # calibrated on the first half
            up_peak = (preds[half:, :k] + margin).max(axis=1)
            true_peak = actual[half:, :k].max(axis=1)
            row[f"{k}h"] = {
                "mae": round(float(np.abs(err[half:, k - 1]).mean()), 4),
                "peak_miss": round(float((true_peak > up_peak).mean()), 3),
                "upper_peak": round(float(up_peak.mean()), 4),
            }
        out[name] = row
    return out


def evaluate_gate(y: Array, every: int, first: int, q: float) -> dict:
    """The gate's own `outlook()` at each scored origin (the second half, as above), fed the
    history before the origin only: its upper peak's miss rate and mean, per horizon."""
    origins = list(range(first, len(y) - max(HORIZONS), every))
    scored = origins[len(origins) // 2 :]
    params = SeasonalParams(quantile=q)
    started = time.process_time()
    row: dict[str, object] = {"origins_scored": len(scored)}
    for k in GATE_HORIZONS:
        hits, uppers = [], []
        for o in scored:
            history = LoadHistory(0.0, 3600.0, tuple(y[:o]))
            look = outlook(history, 3600.0 * o, 3600.0 * k, params)
            assert look is not None
            hits.append(y[o : o + k].max() > look.upper_peak)
            uppers.append(look.upper_peak)
        row[f"{k}h"] = {
            "mae": float("nan"),
            "peak_miss": round(float(np.mean(hits)), 3),
            "upper_peak": round(float(np.mean(uppers)), 4),
        }
    row["cpu_s"] = round(time.process_time() - started, 2)
    return row


GATE_HORIZONS = (1, 2, 4, 8)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--file", type=Path, default=DATA, help="(default %(default)s)")
    ap.add_argument("--every", type=int, default=12, help="hours between origins")
    ap.add_argument("--fit-days", type=int, default=28)
    ap.add_argument("--quantile", type=float, default=0.9)
    ap.add_argument("--methods", nargs="*", help="only these (default: all)")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    y = hourly_load(args.file)
    fit = args.fit_days * DAY
    methods: dict[str, Method] = {
        "persistence": persistence,
        "snaive-day": snaive(DAY),
        "snaive-week": snaive(7 * DAY),
        "snaive-max(day,week)": snaive_max,
        "holt-winters": holt_winters(fit),
        "stl+ar": stl_ar(fit),
    }
    if args.methods:
        methods = {k: m for k, m in methods.items() if k in args.methods}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # statsmodels' convergence chatter
        result = evaluate(y, methods, args.every, 29 * DAY, args.quantile)
        if not args.methods or "gate" in args.methods:
            result["gate: outlook()"] = evaluate_gate(y, args.every, 29 * DAY, args.quantile)
    if args.json:
        print(json.dumps(result, indent=1))
        return
    print(f"{len(y)} hours; quantile {args.quantile}; target peak miss {1 - args.quantile:.2f}")
    print(f"{'method':22} {'cpu s':>6}  " + "  ".join(f"{k}h mae/miss/up" for k in (1, 2, 4, 8)))
    for name, row in result.items():
        cells = [
            f"{row[f'{k}h']['mae']:.3f}/{row[f'{k}h']['peak_miss']:.2f}/{row[f'{k}h']['upper_peak']:.3f}"
            for k in (1, 2, 4, 8)
        ]
        print(f"{name:22} {row['cpu_s']:6.1f}  " + "  ".join(f"{c:>15}" for c in cells))


if __name__ == "__main__":
    main()
