"""Forecast benchmark (not a test): `forecast()` on 10,000 jobs x 7 days of 5-minute history.

    .venv/bin/python bench/forecast_bench.py [--jobs 10000] [--days 7] [--step 300] [--seed 1]

Builds a synthetic history (`reclaimer.forecast.history.History`, one float32 row per job; with
`--frame`, the same points as a long (job, timestamp, value) frame) shaped like `alibaba-gentd26`:
per job, bursts of 15-25% start at a rate that follows a shared daily load curve times a
per-job share, last 1-6 steps, and two thirds of the samples are exactly 0. It then times one
`forecast()` call (grid, features, walk-forward fit, prediction, `Forecast` objects) on it, and
reports the wall time, the process' CPU time, its peak RSS (which includes the input history
itself) and, from a second traced call, the peak of what `forecast()` allocates.
The issue's budget is forecast + plan < 30 s and < 1 GiB RSS on 2 cores.
"""

from __future__ import annotations

import argparse
import json
import resource
import time
import tracemalloc

import numpy as np
import numpy.typing as npt
import pandas as pd

from reclaimer.forecast.forecaster import ForecastParams, forecast
from reclaimer.forecast.history import History


def job_names(count: int) -> list[str]:
    return [f"team-{j % 50:02d}/job-{j:05d}" for j in range(count)]


def synthetic_values(jobs: int, days: float, step: float, seed: int) -> npt.NDArray[np.float32]:
    """(jobs, steps) float32 utilization: row j is job j of `job_names`, column k 1.7e9 + k*step."""
    rng = np.random.default_rng(seed)
    steps = int(days * 86400 / step)
    t = np.arange(steps) * step
    load = 0.5 + 0.5 * np.sin(2 * np.pi * t / 86400.0)  # shared daily cycle
    values = np.empty((jobs, steps), dtype=np.float32)
    block = 500  # generate in blocks so the generator's peak memory stays small
    for lo in range(0, jobs, block):
        n = min(block, jobs - lo)
        share = rng.gamma(2.0, 0.5, size=(n, 1)) * (rng.random((n, 1)) > 0.1)
        starts = rng.random((n, steps)) < np.clip(0.08 * share * load, 0, 1)
        length = rng.integers(1, 7, size=(n, steps))
        busy_until = np.where(starts, np.arange(steps) + length, -1)
        busy = np.maximum.accumulate(busy_until, axis=1) >= np.arange(steps)
        level = rng.uniform(0.15, 0.25, size=(n, steps))
        values[lo : lo + n] = np.where(busy, level, 0.0)
    return values


def synthetic_history(jobs: int, days: float, step: float, seed: int) -> History:
    """The synthetic fleet as the reclaimer keeps its history: one float32 row per job."""
    return History(tuple(job_names(jobs)), 1.7e9, step, synthetic_values(jobs, days, step, seed))


def synthetic_frame(jobs: int, days: float, step: float, seed: int) -> pd.DataFrame:
    """The same points as a long (job, timestamp, value) frame, as the forecaster once took."""
    return synthetic_history(jobs, days, step, seed).to_frame()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--jobs", type=int, default=10_000)
    parser.add_argument("--days", type=float, default=7.0)
    parser.add_argument("--step", type=float, default=300.0)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--lookback", type=float, default=ForecastParams().lookback_seconds)
    parser.add_argument("--frame", action="store_true", help="pass a long frame, not a History")
    args = parser.parse_args()
    arrays = synthetic_history(args.jobs, args.days, args.step, args.seed)
    now, rows = arrays.end, arrays.values.size
    history: History | pd.DataFrame = arrays.to_frame() if args.frame else arrays
    del arrays
    rss_before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    params = ForecastParams(lookback_seconds=args.lookback)
    wall, cpu = time.perf_counter(), time.process_time()
    result = forecast(history, params, now)
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    tracemalloc.start()  # a second, traced call: what forecast() itself allocates at its peak
    forecast(history, params, now)
    traced_peak = tracemalloc.get_traced_memory()[1] / 2**20
    tracemalloc.stop()
    idle = sum(f.idle for f in result.values())
    report = {
        "jobs": args.jobs,
        "lookback_seconds": args.lookback,
        "points": rows,
        "input": "frame" if args.frame else "history",
        "forecast_seconds": round(wall, 2),
        "forecast_cpu_seconds": round(cpu, 2),
        "peak_rss_mib_before_forecast": round(rss_before),
        "peak_rss_mib": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024),
        "forecast_peak_alloc_mib": round(traced_peak),
        "idle_jobs": idle,
        "methods": sorted({f.method for f in result.values()}),
    }
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
