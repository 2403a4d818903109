"""What one reclaimer cycle costs against a real Prometheus, for N pods: memory and time.

    .venv/bin/python bench/reclaimer_prom_read.py [--pods 2000] [--hours 24] [--step 60]

Backfills N pods x `--hours` of per-pod history at one sample per `--step` seconds (promtool;
a third of the pods idle, the rest busy, each pod its own job), starts /usr/bin/prometheus on
loopback, then runs a cycle in a fresh child process (`--measure`, so the backfill never counts):
the first read (whole window), `forecast()` and `plan()` on it, then, keeping only the per-pod
history as the controller does, a later read (the tail only) with its forecast and plan. Prints
JSON: requests, seconds per step, and the child's peak RSS (VmHWM, the whole process) at start,
after each read and plan. The reads use the controller's defaults (`HistoryParams`), so the
numbers are the Deployment's. Results: docs/reclaimer.md, "Memory and scale".
"""

from __future__ import annotations

import argparse
import asyncio
import json
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(REPO)]  # the package first: tests/reclaimer would shadow it
sys.path.append(str(REPO / "tests"))

from promserver import PROMTOOL, start_prometheus  # noqa: E402

import gpu_contract as gc  # noqa: E402
from reclaimer.forecast.forecaster import forecast  # noqa: E402
from reclaimer.forecast.history import History  # noqa: E402
from reclaimer.forecast.params import for_policy  # noqa: E402
from reclaimer.model import (  # noqa: E402
    ClusterView,
    DataQuality,
    Job,
    JobKind,
    Node,
    Pod,
    PodPhase,
    Queue,
    Snapshot,
)
from reclaimer.plan.planner import plan  # noqa: E402
from reclaimer.policy.settings import Policy  # noqa: E402
from reclaimer.prometheus.client import PromClient, RetryPolicy  # noqa: E402
from reclaimer.prometheus.history import HistoryParams, MetricsSource  # noqa: E402
from reclaimer.prometheus.reads import MetricsRead, read_metrics  # noqa: E402


def view(n: int, now: float) -> ClusterView:
    jobs, pods = [], []
    for i in range(n):
        ns, name = f"ns-{i % 50}", f"p-{i}"
        key, node = f"{ns}/{name}", f"n-{i // 8}"
        pods.append(Pod(key, ns, name, node, 1, PodPhase.RUNNING, job=key, start_time=now - 2e5))
        jobs.append(Job(key, JobKind.POD, ns, name, "q", 1, pods=(key,), start_time=now - 2e5))
    nodes = tuple(Node(f"n-{i}", 8) for i in range((n + 7) // 8))
    return ClusterView(now, (Queue("q"),), tuple(jobs), tuple(pods), nodes, ())


def _peak_mib() -> int:
    """This process' peak resident set so far: VmHWM, the high-water mark of its own memory map
    (ru_maxrss would not do: Linux carries it over from the parent through fork and exec, and
    the parent holds the backfill text)."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return round(int(line.split()[1]) / 1024)
    return round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024)


def write_history(path: Path, n: int, end: float, hours: float, step: float) -> None:
    """OpenMetrics for promtool, written pod by pod (a 20k-pod day is gigabytes of text)."""
    times = [end - hours * 3600 + i * step for i in range(int(hours * 3600 / step) + 1)]
    with path.open("w", encoding="utf-8") as out:
        for name in (gc.POD_UTILIZATION, gc.POD_ALLOCATED):
            out.write(f"# TYPE {name} gauge\n")
            for i in range(n):
                lab = f'Hostname="n",gpu="{i % 8}",namespace="ns-{i % 50}",pod="p-{i}"'
                level = 1.0 if name == gc.POD_ALLOCATED else (0.0 if i % 3 == 0 else 0.7)
                out.writelines(f"{name}{{{lab}}} {level!r} {t:.3f}\n" for t in times)
        out.write("# EOF\n")


async def cycle(client: PromClient, v: ClusterView, now: float, previous: History | None,
                params: HistoryParams) -> tuple[MetricsRead, dict[str, float]]:  # fmt: skip
    t0 = time.perf_counter()
    read = await read_metrics(
        client, v, now, params, MetricsSource.GPU_RECLAIM, recorded=False,
        previous=previous,
    )  # fmt: skip
    t1 = time.perf_counter()
    rss_read = _peak_mib()
    policy = Policy()
    forecasts = forecast(read.jobs, for_policy(policy), now)
    t2 = time.perf_counter()
    snap = Snapshot(**{f: getattr(v, f) for f in v.__dataclass_fields__},
                    quality=DataQuality(read.metrics_at, read.complete, read.problems))  # fmt: skip
    plan(snap, forecasts, policy, now)
    t3 = time.perf_counter()
    return read, {
        "requests": read.requests, "read_seconds": round(t1 - t0, 2),
        "forecast_seconds": round(t2 - t1, 2), "plan_seconds": round(t3 - t2, 2),
        "cycle_seconds": round(t3 - t0, 2),
        "idle_forecasts": sum(f.idle for f in forecasts.values()),
        "peak_rss_mib_after_read": rss_read, "peak_rss_mib_after_plan": _peak_mib(),
    }  # fmt: skip


async def measure(url: str, pods: int, now: float, hours: float, step: float) -> dict[str, object]:
    params = HistoryParams(window=hours * 3600, step=step)
    v = view(pods, now)
    started = _peak_mib()
    async with PromClient(url, RetryPolicy(timeout=120.0)) as client:
        first, first_cost = await cycle(client, v, now, None, params)
        history_mib = (first.jobs.values.nbytes + first.pod_history.values.nbytes) / 2**20
        kept = first.pod_history  # all the controller keeps between cycles
        del first
        _, later_cost = await cycle(client, v, now + step, kept, params)
    return {
        "peak_rss_mib_at_start": started,
        "first": first_cost,
        "later": later_cost,
        "history_mib": round(history_mib, 1),
        "peak_rss_mib": _peak_mib(),
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--pods", type=int, default=2000)
    ap.add_argument("--hours", type=float, default=24.0)
    ap.add_argument("--step", type=float, default=60.0)
    ap.add_argument("--measure", metavar="URL", help=argparse.SUPPRESS)
    ap.add_argument("--now", type=float, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.measure:
        report = asyncio.run(measure(args.measure, args.pods, args.now, args.hours, args.step))
        print(json.dumps(report))
        return
    end = time.time() - 30
    t0 = time.perf_counter()
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        write_history(work / "history.om", args.pods, end, args.hours, args.step)
        (work / "tsdb").mkdir()
        subprocess.run(
            [PROMTOOL, "tsdb", "create-blocks-from", "openmetrics", str(work / "history.om"),
             str(work / "tsdb")],
            check=True, capture_output=True,
        )  # fmt: skip
        (work / "history.om").unlink()
        with start_prometheus(work) as server:
            setup = round(time.perf_counter() - t0, 1)
            child = subprocess.run(
                [sys.executable, __file__, "--measure", server.url, "--pods", str(args.pods),
                 "--hours", str(args.hours), "--step", str(args.step), "--now", str(end + 10)],
                capture_output=True, text=True, check=True,
            )  # fmt: skip
    report = {"pods": args.pods, "hours": args.hours, "step_seconds": args.step}
    report |= {"backfill_seconds": setup, **json.loads(child.stdout)}
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
