"""Planning-cycle benchmark (not a test): forecast + plan for 10,000 GPU jobs on 1,000 nodes.

    .venv/bin/python bench/plan_bench.py [--jobs 10000] [--nodes 1000] [--days 7] [--seed 1]
                                         [--synthetic-forecasts] [--cost-aware-stops]

Builds a cluster the size of the issue's target: 1,000 nodes of 8 GPUs (a third of them
time-sliced 4 ways), filled with 10,000 GPU jobs (whole-node and multi-node gangs, small jobs,
shared-GPU pods), 40 queues (half reclaimable, deserved shares by weight, some starved), 2,000
pending jobs of mixed gang shapes, jobs the reclaimer suspended, per-GPU stats on every node. By
default it first runs `reclaimer.forecast.forecaster.forecast` on 7 days of 5-minute history per
job (2,016 samples x 10,000 jobs, from `forecast_bench.synthetic_history`: the float32 `History`
the controller keeps, 77 MiB; `--frame` passes the same points as the long frame the forecaster
once took) and plans on its answers; `--synthetic-forecasts` skips that and draws forecasts at
random (plan alone). Every pod has a day of contention (busy and co-busy time, the contention
rule's input). Reports wall and CPU seconds for each step, the plan's size, the history's bytes,
and the peak RSS of the whole process (`ru_maxrss`: run one scale per process).
`--cost-aware-stops` plans under the policy's `costAwareStops` (`reclaimer.plan.stop_cost`).
Budget (issue 16): forecast + plan < 30 s and peak RSS <= 400 MiB on 2 cores.
"""

from __future__ import annotations

import argparse
import json
import random
import resource
import time
from collections.abc import Mapping
from types import MappingProxyType

import pandas as pd
from forecast_bench import job_names, synthetic_history  # bench/ is on sys.path as a script

from reclaimer.forecast.forecaster import ForecastParams, forecast
from reclaimer.forecast.history import History
from reclaimer.model import (
    Contention,
    DataQuality,
    Forecast,
    GpuStats,
    Job,
    JobKind,
    Node,
    PendingDemand,
    Pod,
    PodBusy,
    PodPhase,
    Queue,
    Snapshot,
)
from reclaimer.plan.planner import plan
from reclaimer.policy.settings import Limits, Policy, TimeSlicing, WorkloadClass

NOW = 1.7e9 + 7 * 86400 - 300  # the last sample of forecast_bench's 7-day history


class ClusterBuilder:
    """Fills nodes with jobs in a fixed, seeded way."""

    def __init__(self, nodes: int, seed: int) -> None:
        self.rng = random.Random(seed)
        self.nodes = [
            Node(
                name=f"node-{i:04d}",
                gpus=8,
                replicas=4 if i % 3 == 0 else 1,
                gpu_stats=tuple(
                    GpuStats(self.rng.random() * 0.6, self.rng.random() * 0.8) for _ in range(8)
                ),
            )
            for i in range(nodes)
        ]
        self.free = {n.name: n.gpus * n.replicas for n in self.nodes}
        self.jobs: list[Job] = []
        self.pods: list[Pod] = []

    def add(
        self, key: str, queue: str, placed: list[tuple[str, int]], labels: dict[str, str]
    ) -> None:
        ns, name = key.split("/")
        start = NOW - self.rng.uniform(300, 5 * 86400)
        keys = tuple(f"{key}-{i}" for i in range(len(placed)))
        annotations = {"volcano.sh/preemptable": "false"} if self.rng.random() < 0.05 else {}
        self.jobs.append(
            Job(
                key=key, kind=JobKind.PYTORCH_JOB, namespace=ns, name=name, queue=queue,
                gpus=sum(g for _, g in placed), min_member=len(placed), start_time=start,
                priority=self.rng.randrange(3), pods=keys,
                annotations=MappingProxyType(annotations),
            )
        )  # fmt: skip
        for pod_key, (node, gpus) in zip(keys, placed, strict=True):
            self.free[node] -= gpus
            self.pods.append(
                Pod(
                    key=pod_key, namespace=ns, name=pod_key.split("/")[1], node=node, gpus=gpus,
                    phase=PodPhase.RUNNING, job=key, start_time=start,
                    labels=MappingProxyType(labels),
                )
            )  # fmt: skip

    def place(self, key: str, queue: str) -> None:
        """A gang of 1-4 pods of 1, 2, 4 or 8 slots on whole-GPU nodes, else one shared slot."""
        size = self.rng.choice([1, 1, 2, 4, 8])
        pods = self.rng.choice([1, 1, 1, 2, 4]) if size == 8 else 1
        placed: list[tuple[str, int]] = []
        for node in self._whole_nodes_with(size, pods):
            placed.append((node, size))
        if len(placed) == pods:
            self.add(key, queue, placed, {})
            return
        shared = self._shared_node()
        if shared is not None:
            self.add(key, queue, [(shared, 1)], {"gpu-reclaim.io/workload-class": "inference"})

    def _whole_nodes_with(self, size: int, pods: int) -> list[str]:
        out = []
        for _ in range(20):  # a few random probes, as a scheduler's sampling would
            n = self.nodes[self.rng.randrange(len(self.nodes))]
            if n.replicas == 1 and self.free[n.name] >= size and n.name not in out:
                out.append(n.name)
                if len(out) == pods:
                    break
        return out

    def _shared_node(self) -> str | None:
        for _ in range(50):
            n = self.nodes[self.rng.randrange(len(self.nodes))]
            if n.replicas > 1 and self.free[n.name] >= 1:
                return n.name
        return None


def build_snapshot(jobs: int, nodes: int, pending: int, seed: int) -> Snapshot:
    builder = ClusterBuilder(nodes, seed)
    queues = tuple(
        Queue(name=f"q{i:02d}", weight=1 + i % 4, reclaimable=i % 2 == 0) for i in range(40)
    )
    rng = builder.rng
    for key in job_names(jobs):
        # Even queues (reclaimable) get most of the jobs, so odd ones stay below their share.
        builder.place(key, f"q{2 * rng.randrange(20) + (rng.random() < 0.2):02d}")
    for i in range(200):  # jobs the reclaimer suspended earlier
        builder.jobs.append(
            Job(
                key=f"susp/job-{i:03d}", kind=JobKind.PYTORCH_JOB, namespace="susp",
                name=f"job-{i:03d}", queue="q00", gpus=8, min_member=1, suspended=True,
                suspended_by_reclaimer=True,
            )
        )  # fmt: skip
    demands = tuple(
        PendingDemand(
            queue=f"q{2 * rng.randrange(20) + 1:02d}",
            job=f"wait/job-{i:04d}",
            gpus=rng.choice([1, 2, 4, 8]) * (count := rng.choice([1, 1, 2, 4])),
            min_member=count,
            since=NOW - rng.uniform(0, 3600),
            priority=rng.randrange(3),
        )
        for i in range(pending)
    )
    return Snapshot(
        taken_at=NOW,
        queues=queues,
        jobs=tuple(builder.jobs),
        pods=tuple(builder.pods),
        nodes=tuple(builder.nodes),
        pending=demands,
        quality=DataQuality(metrics_at=NOW - 30),
        last_actions=MappingProxyType({}),
        contention=day_of_contention(builder.pods, rng),
    )


def day_of_contention(pods: list[Pod], rng: random.Random) -> Contention:
    """Every pod's day as the controller reads it hourly (the contention rule's input): busy
    up to half of it, up to a tenth of that beside a busy neighbour."""
    day = 86400.0
    rows = {}
    for p in pods:
        busy = rng.uniform(0.0, 0.5) * day
        rows[p.key] = PodBusy(day, busy, rng.uniform(0.0, 0.1) * busy)
    return Contention(day, MappingProxyType(rows))


def synthetic_forecasts(keys: list[str], seed: int) -> dict[str, Forecast]:
    rng = random.Random(seed)
    out = {}
    for key in keys:
        confidence = rng.random()
        out[key] = Forecast(
            job=key, idle=confidence >= 0.85, confidence=confidence,
            predicted_idle_seconds=900.0, horizon_seconds=900.0, threshold=0.05,
            method="synthetic", samples=2016, last_sample_at=NOW - 60,
        )  # fmt: skip
    return out


def model_forecasts(
    jobs: int, days: float, seed: int, frame: bool
) -> tuple[Mapping[str, Forecast], float, float, int]:
    arrays = synthetic_history(jobs, days, 300.0, seed)
    now = arrays.end
    history: History | pd.DataFrame = arrays.to_frame() if frame else arrays
    size = int(history.memory_usage(deep=False).sum()) if frame else arrays.values.nbytes
    del arrays
    wall, cpu = time.perf_counter(), time.process_time()
    result = forecast(history, ForecastParams(), now)
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    return result, wall, cpu, size


def policy(cost_aware: bool = False) -> Policy:
    classes = (WorkloadClass("inference", gpu_share=0.25, overcommit=1.5, max_memory=0.8),)
    return Policy(
        limits=Limits(
            max_preemptions_per_cycle=50,
            max_preemptions_per_namespace=5,
            max_pods_per_node=8,
            max_gpus_freed_per_cycle=400,
            max_resumes_per_cycle=20,
            max_reshapes_per_cycle=100,
        ),
        time_slicing=TimeSlicing(max_replicas=8, workloads=classes),
        cost_aware_stops=cost_aware,
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--jobs", type=int, default=10_000)
    parser.add_argument("--nodes", type=int, default=1_000)
    parser.add_argument("--pending", type=int, default=2_000)
    parser.add_argument("--days", type=float, default=7.0)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--synthetic-forecasts", action="store_true")
    parser.add_argument("--frame", action="store_true", help="history as the old long frame")
    parser.add_argument("--cost-aware-stops", action="store_true", help="costAwareStops: true")
    args = parser.parse_args()
    report: dict[str, object] = {"jobs": args.jobs, "nodes": args.nodes}
    if args.synthetic_forecasts:
        forecasts: Mapping[str, Forecast] = synthetic_forecasts(job_names(args.jobs), args.seed)
        report["forecast"] = "synthetic (not timed)"
    else:
        forecasts, forecast_wall, cpu, size = model_forecasts(
            args.jobs, args.days, args.seed, args.frame
        )
        report.update(
            history="long frame" if args.frame else "History (float32)",
            history_mib=round(size / 2**20, 1),
            forecast_seconds=round(forecast_wall, 2),
            forecast_cpu_seconds=round(cpu, 2),
        )
        report["forecast_idle_jobs"] = sum(f.idle for f in forecasts.values())
    snapshot = build_snapshot(args.jobs, args.nodes, args.pending, args.seed)
    report.update(snapshot_jobs=len(snapshot.jobs), snapshot_pods=len(snapshot.pods))
    wall, cpu = time.perf_counter(), time.process_time()
    result = plan(snapshot, forecasts, policy(args.cost_aware_stops), NOW)
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    kinds = [a.kind.value for a in result.actions]
    report.update(
        plan_seconds=round(wall, 2),
        plan_cpu_seconds=round(cpu, 2),
        actions={k: kinds.count(k) for k in sorted(set(kinds))},
        skipped=len(result.skipped),
        peak_rss_mib=round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024),
    )
    if not args.synthetic_forecasts:
        report["forecast_plus_plan_seconds"] = round(forecast_wall + wall, 2)
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
