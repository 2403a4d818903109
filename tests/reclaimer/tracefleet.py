"""A fleet built from the shared alibaba-gentd26 trace, and its forecasts and plan as plain data.

The trace's pods (one sample every 57 s, about 23 h), all of those a copy holds or the ones
named, become as many one-pod jobs of one GPU each, packed eight to a node, in four queues (two
reclaimable and full, two starved with pending gangs). `outcome` runs `forecast()` at a few
times of the day and `plan()` at the last one and returns what they decided as JSON-able data,
for comparing one history representation with another: `tests/fixtures/trace_plan/gentd26.json`
holds the answer of the long-frame code this replaced on the pods it names
(`tests/fixtures/trace_plan/README.md` says how it was made).
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping
from pathlib import Path
from types import MappingProxyType
from typing import Any

import pandas as pd

from reclaimer.decisions import Plan
from reclaimer.model import (
    DataQuality,
    Forecast,
    Job,
    JobKind,
    Node,
    PendingDemand,
    Pod,
    PodPhase,
    Queue,
    Snapshot,
)
from reclaimer.plan.planner import plan
from reclaimer.policy.settings import Limits, Policy
from reclaimer.simulate.trace import read_utilization

TRACE = Path("alibaba-gentd26") / "pod_gpu_duty_cycle.csv.gz"
HOURS_BEFORE_END = (12.0, 6.0, 0.0)  # forecast times: the trace's end minus these
FORECAST_FIELDS = (
    "job", "idle", "confidence", "predicted_idle_seconds", "horizon_seconds", "threshold",
    "method", "samples", "last_sample_at",
)  # fmt: skip

POLICY = Policy(limits=Limits(max_preemptions_per_cycle=40, max_preemptions_per_namespace=40))
Forecasting = Callable[[float], Mapping[str, Forecast]]


def trace_history(shared_data: Path, pods: Collection[str] | None = None) -> pd.DataFrame:
    """The trace, or the rows of `pods` (container ids) in it, as the forecaster's long history
    frame (job, timestamp, value ratio); each pod's job is `team/<first 12 characters of its
    container id>`."""
    history = read_utilization(shared_data / TRACE)
    if pods is not None:
        history = history[history["job"].isin(set(pods))].reset_index(drop=True)
    return history.assign(job="team/" + history["job"].astype(str).str[:12])


def forecast_times(history: pd.DataFrame) -> list[float]:
    end = float(history["timestamp"].max())
    return [end - h * 3600 for h in HOURS_BEFORE_END]


def snapshot(jobs: list[str], now: float) -> Snapshot:
    """`jobs` are job keys. One GPU per job, eight jobs per node; queues a and b reclaimable,
    c and d starved, with pending jobs waiting."""
    nodes = tuple(Node(f"node-{i:03d}", 8) for i in range((len(jobs) + 7) // 8))
    queues = (
        Queue("a", weight=1),
        Queue("b", weight=1),
        Queue("c", weight=2, reclaimable=False),
        Queue("d", weight=2, reclaimable=False),
    )
    job_objs, pods = [], []
    for i, key in enumerate(jobs):
        name, node = key.split("/")[1], nodes[i // 8].name
        pod_key = f"{key}-0"
        start = now - 86400.0
        job_objs.append(
            Job(key, JobKind.PYTORCH_JOB, "team", name, "ab"[i % 2], 1, start_time=start,
                pods=(pod_key,))
        )  # fmt: skip
        pods.append(
            Pod(pod_key, "team", pod_key.split("/")[1], node, 1, PodPhase.RUNNING, job=key,
                start_time=start)
        )  # fmt: skip
    pending = tuple(
        PendingDemand("cd"[i % 2], f"wait/job-{i:02d}", gpus=1, since=now - 3600.0)
        for i in range(30)
    )
    return Snapshot(
        taken_at=now, queues=queues, jobs=tuple(job_objs), pods=tuple(pods), nodes=nodes,
        pending=pending, quality=DataQuality(metrics_at=now - 30),
        last_actions=MappingProxyType({}),
    )  # fmt: skip


def outcome(jobs: list[str], times: list[float], forecasting: Forecasting) -> dict[str, Any]:
    """Forecasts at each of `times` and the plan at the last, as JSON-able data."""
    out: dict[str, Any] = {"forecasts": {}, "plan": None}
    forecasts: Mapping[str, Forecast] = {}
    for now in times:
        forecasts = forecasting(now)
        out["forecasts"][repr(now)] = {
            k: [repr(getattr(f, name)) for name in FORECAST_FIELDS]
            for k, f in sorted(forecasts.items())
        }
    now = times[-1]
    out["plan"] = plan_data(plan(snapshot(jobs, now), forecasts, POLICY, now))
    return out


def plan_data(p: Plan) -> dict[str, Any]:
    return {
        "actions": [
            [str(a.kind), a.target, str(a.reason), a.evidence.gpus_freed] for a in p.actions
        ],
        "skipped": [[s.target, str(s.reason), s.detail] for s in p.skipped],
        "warnings": [[w.target, str(w.reason)] for w in p.warnings],
    }
