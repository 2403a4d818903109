"""How much one reclaimer read costs against a real Prometheus, for N pods.

Backfills N pods x `--hours` of per-pod history at 60 s (promtool), starts /usr/bin/prometheus on
loopback, then times the first read (whole window) and a later read (tail only) and prints the
request counts. Run: .venv/bin/python bench/reclaimer_prom_read.py --pods 2000 --hours 6
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))
# the repo root before tests/: tests/reclaimer/ would otherwise shadow the reclaimer package
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from promserver import openmetrics, start_prometheus

import gpu_contract as gc
from reclaimer.model import ClusterView, Job, JobKind, Node, Pod, PodPhase
from reclaimer.prometheus.client import PromClient, RetryPolicy
from reclaimer.prometheus.history import HistoryParams, MetricsSource
from reclaimer.prometheus.reads import read_metrics


def world(n: int, end: float, hours: float) -> tuple[str, ClusterView]:
    times = [end - hours * 3600 + i * 60.0 for i in range(int(hours * 60) + 1)]
    series, jobs, pods = [], [], []
    for i in range(n):
        lab = {"namespace": f"ns-{i % 50}", "pod": f"p-{i}", "gpu": str(i % 8), "Hostname": "n"}
        level = 0.0 if i % 3 == 0 else 0.7
        series.append((gc.POD_UTILIZATION, lab, [(t, level) for t in times]))
        series.append((gc.POD_ALLOCATED, lab, [(t, 1.0) for t in times]))
        key = f"{lab['namespace']}/p-{i}"
        pods.append(Pod(key, lab["namespace"], f"p-{i}", "n", 1, PodPhase.RUNNING, job=key))
        jobs.append(Job(key, JobKind.POD, lab["namespace"], f"p-{i}", "q", 1, pods=(key,)))
    view = ClusterView(end, (), tuple(jobs), tuple(pods), (Node("n", 8),), ())
    return openmetrics(series), view


async def measure(url: str, view: ClusterView, now: float, hours: float) -> None:
    params = HistoryParams(window=hours * 3600, step=60.0)
    async with PromClient(url, RetryPolicy(timeout=120.0)) as client:
        t0 = time.perf_counter()
        first = await read_metrics(client, view, now, params, MetricsSource.GPU_RECLAIM)
        t1 = time.perf_counter()
        later = await read_metrics(
            client,
            view,
            now + 60,
            params,
            MetricsSource.GPU_RECLAIM,
            recorded=first.recorded,
            previous=first.pods,
        )
        t2 = time.perf_counter()
    print(
        f"first read : {first.requests} requests, {len(first.history)} job points, {t1 - t0:.2f} s"
    )
    print(
        f"later read : {later.requests} requests, {len(later.history)} job points, {t2 - t1:.2f} s"
    )


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--pods", type=int, default=2000)
    ap.add_argument("--hours", type=float, default=6.0)
    args = ap.parse_args()
    end = time.time() - 30
    text, view = world(args.pods, end, args.hours)
    with tempfile.TemporaryDirectory() as tmp:
        t0 = time.perf_counter()
        with start_prometheus(Path(tmp), history=text) as server:
            print(
                f"{args.pods} pods x {args.hours:g} h at 60 s: backfill+start "
                f"{time.perf_counter() - t0:.1f} s"
            )
            asyncio.run(measure(server.url, view, end + 10, args.hours))


if __name__ == "__main__":
    main()
