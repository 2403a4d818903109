"""Status page benchmark (not a test): the page's per-cycle costs at 1,000 and 10,000 GPU jobs.

    .venv/bin/python bench/status_page_bench.py [--sizes 1000 10000] [--hours 24] [--step 60]
                                                [--repeats 5] [--seed 1]

For each size it builds `plan_bench`'s cluster (a node per 10 jobs, a pending job per 5, 40
queues), plans it on synthetic forecasts, and times the two things the status page adds: the
controller's `recent_usage` (the sparkline points, from `--hours` of per-job float32 history at
`--step` seconds per job, as a cycle holds it) once per cycle, and `render_page` (the best of
`--repeats`; the server renders once per cycle and serves the same bytes until the next), in
wall and CPU seconds (CPU is the steadier number on a shared machine). It reports the page's
size in bytes and how many jobs it lists (the top `MAX_JOBS` by GPUs; the
page counts the rest). Prints JSON.
"""

from __future__ import annotations

import argparse
import json
import resource
import time
from types import MappingProxyType

from forecast_bench import synthetic_history  # bench/ is on sys.path when run as a script
from plan_bench import NOW, build_snapshot, job_names, policy, synthetic_forecasts

from reclaimer.decisions import ActionResult, Outcome
from reclaimer.model import DataQuality
from reclaimer.plan.planner import plan
from reclaimer.report.cycle import CycleReport, CycleResult
from reclaimer.report.status.jobs import MAX_JOBS
from reclaimer.report.status.page import render_page
from reclaimer.report.usage import recent_usage


def measure(jobs: int, hours: float, step: float, repeats: int, seed: int) -> dict[str, object]:
    snapshot = build_snapshot(jobs, max(jobs // 10, 1), jobs // 5, seed)
    forecasts = synthetic_forecasts(job_names(jobs), seed)
    result = plan(snapshot, forecasts, policy(), NOW)
    history = synthetic_history(jobs, hours / 24, step, seed)
    now = history.end
    wall, cpu = time.perf_counter(), time.process_time()
    usage = recent_usage(snapshot, history, {}, now)
    usage_seconds, usage_cpu = time.perf_counter() - wall, time.process_time() - cpu
    del history
    report = CycleReport(
        result=CycleResult.SUCCESS, at=NOW, duration=1.0, message="bench", plan=result,
        quality=DataQuality(metrics_at=NOW - 30), forecasts=MappingProxyType(forecasts),
        outcomes=tuple(ActionResult(a, Outcome.DRY_RUN) for a in result.actions), acted=True,
        requests=6, usage=MappingProxyType(usage),
    )  # fmt: skip
    times, cpus = [], []
    for _ in range(repeats):
        wall, cpu = time.perf_counter(), time.process_time()
        page = render_page(report, dry_run=True)
        times.append(time.perf_counter() - wall)
        cpus.append(time.process_time() - cpu)
    return {
        "usage_seconds": round(usage_seconds, 3),
        "usage_cpu_seconds": round(usage_cpu, 3),
        "render_seconds": round(min(times), 4),
        "render_cpu_seconds": round(min(cpus), 4),
        "page_bytes": len(page.encode("utf-8")),
        "jobs_with_usage": len(usage),
        "jobs_listed": min(MAX_JOBS, len({*usage, *forecasts})),
        "actions": len(result.actions),
        "skipped": len(result.skipped),
        "queues": len(result.queues),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[1_000, 10_000])
    parser.add_argument("--hours", type=float, default=24.0)
    parser.add_argument("--step", type=float, default=60.0)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    report: dict[str, object] = {"history_hours": args.hours, "step_seconds": args.step}
    for jobs in args.sizes:
        report[str(jobs)] = measure(jobs, args.hours, args.step, args.repeats, args.seed)
    report["peak_rss_mib"] = round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024)
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
