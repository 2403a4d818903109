"""The reclaim policies a replay compares, each deciding victims at a control tick.

- `none`: never preempts.
- `threshold`: an idle culler; preempts every running job of a reclaimable queue whose
  utilization stayed below the threshold for the last `idle_window` (default 30 minutes),
  whether or not anyone waits for the GPUs (what `util < threshold for duration` cleaners do).
- `allocation`: Volcano-style reclaim, utilization-blind: when a guaranteed queue below its
  deserved share has pending demand, reclaimable jobs are taken back, every one a candidate.
  It runs through the project's `plan()` with every reclaimable job declared idle (confidence
  1), so victim choice, fit check, limits and minimum runtime are the same as ours.
- `timeslice`: what NVIDIA's docs give: the pool's GPUs time-sliced at a fixed `--replicas`,
  nothing ever preempted or reshaped.
- `timeslice-tuned`: static time-slicing as a careful operator would set it, per GPU model the
  most replicas (up to 4) the replay's 99th-percentile pod memory peak fits (`sim_pool.tuned`; a
  hindsight baseline), nothing ever preempted or reshaped.
- `forecast` (ours): the controller's own `forecast()` on each running reclaimable job's recent
  utilization history, then the controller's own `plan()`; victims are what the plan preempts.
  The default policy takes idle jobs only; with `reclaimBusyAfter` set, also busy reclaimable
  jobs for a pending job that has waited that long when idle ones cannot make room.

The tick sees a `TickView` of the replay (running and pending jobs); what the controller gets is
a `Snapshot` built from it, the shape the live controller builds from the cluster. The planner
counts capacity in schedulable slots per node and checks fit node by node; the replay packs
milli-GPUs per device, so it shows the planner one node per device (`node/gpuN`, 1 GPU,
`SLOTS_PER_GPU` replicas): a slot is a tenth of a GPU, a GPU-sharing pod holds its share rounded
up to a tenth (`slots_of`, so the planner never sees more room than there is), and a running
`k`-GPU pod holds `k` devices. The planner's fit check is then exact for one-GPU and sharing
pods (97% of the trace's pods); a pending multi-GPU pod needs all its GPUs on one node, which
this view cannot express, so the replay plans for those in a second, whole-device view per node
(`sim_devices`, which also runs both plans).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from enum import StrEnum

import numpy as np
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
    PodGpuUsage,
    PodPhase,
    Queue,
    Snapshot,
)
from reclaimer.simulate.sharing.usage import Usage

ForecastFn = Callable[[pd.DataFrame, float], Mapping[str, Forecast]]
PlanFn = Callable[[Snapshot, Mapping[str, Forecast], float], Plan]
GateFn = Callable[[Snapshot, float], bool]


SLOTS_PER_GPU = 10


def slots_of(milli: int) -> int:
    """Planner slots (tenths of a GPU, rounded up) that `milli` milli-GPUs of a device hold."""
    return -(-milli // (1000 // SLOTS_PER_GPU))


class Strategy(StrEnum):
    NONE = "none"
    ALLOCATION = "allocation"
    THRESHOLD = "threshold"
    FORECAST = "forecast"
    TIMESLICE = "timeslice"  # static time-slicing on the pool (`--replicas`), no reclaim
    TIMESLICE_TUNED = (
        "timeslice-tuned"  # static, replicas per model from the peaks (`sim_pool.tuned`)
    )


STATIC = frozenset({Strategy.NONE, Strategy.TIMESLICE, Strategy.TIMESLICE_TUNED})  # never act


@dataclass(frozen=True)
class ReplayPlanner:
    """The controller's decision functions, with their settings bound."""

    forecast: ForecastFn
    plan: PlanFn  # in the device view: limits on GPUs freed counted in slots
    threshold: float
    horizon_seconds: float
    history_seconds: float
    min_runtime_seconds: float  # the planner never preempts younger jobs
    min_history_seconds: float  # the forecaster never calls a job with less history idle
    cooldown_seconds: float  # the planner leaves a job alone this long after acting on it
    reclaim_after_seconds: float  # the planner takes no victim for a job pending less long
    plan_devices: PlanFn  # in the node view (see `sim_devices`): limits counted in devices
    plan_resumes: PlanFn  # in the device view, resumes only (see `sim_devices`)
    plan_reshapes: PlanFn  # on the time-sliced pool's nodes, reshapes only (`sim_pool.reshaping`)
    node_cooldown_seconds: float  # the planner reshapes a node at most this often
    contention_busy_above: float = 0.3  # `timeSlicing.contentionBusyAbove`
    may_resume: GateFn | None = None  # false: `plan_resumes` would resume nothing (`plan.planner`)


@dataclass(frozen=True)
class RunningJob:
    index: int
    job: Job
    pods: tuple[Pod, ...]
    progress: float  # seconds of work done now
    elapsed: float  # seconds since this run started
    reclaimable: bool


@dataclass(frozen=True)
class HeldJob:
    """A victim the reclaimer holds suspended: not running, not pending."""

    index: int
    job: Job


@dataclass(frozen=True)
class TickView:
    now: float
    running: tuple[RunningJob, ...]
    pending: tuple[PendingDemand, ...]
    queues: tuple[Queue, ...]
    nodes: tuple[Node, ...]
    last_actions: Mapping[str, float]
    suspended: tuple[HeldJob, ...] = ()
    pod_gpus: tuple[PodGpuUsage, ...] = ()  # the pool's per-pod readings (`sim_pool.reshaping`)


def culler_victims(view: TickView, usage: Usage, threshold: float, window: float) -> list[int]:
    """Jobs idle (below `threshold`) for the whole last `window` seconds of this run."""
    old = [r for r in view.running if r.reclaimable and r.elapsed >= window]
    if not old:
        return []
    index = np.array([r.index for r in old], dtype=np.int64)
    progress = np.array([r.progress for r in old], dtype=np.float64)
    idle = usage.idle_through_window(index, progress, threshold)
    return [r.index for r, flag in zip(old, idle, strict=True) if flag]


def history_frame(view: TickView, usage: Usage, cap_seconds: float) -> pd.DataFrame:
    """Long-format history (`job`, `timestamp`, `value`) of the reclaimable running jobs.

    Sample k of a run was taken k steps after it started; only the last `cap_seconds` are kept.
    """
    step = usage.step
    running = [r for r in view.running if r.reclaimable]
    counts, firsts = [], []
    for r in running:
        last = int(r.elapsed // step)
        first = max(0, last - int(cap_seconds // step))
        firsts.append(first)
        counts.append(last - first + 1)
    n = np.array(counts, dtype=np.int64)
    if not len(n):
        return pd.DataFrame({"job": [], "timestamp": [], "value": []})
    owner = np.repeat(np.arange(len(n)), n)
    within = np.arange(int(n.sum())) - np.repeat(np.cumsum(n) - n, n)
    k = np.repeat(np.array(firsts, dtype=np.int64), n) + within
    elapsed = np.array([r.elapsed for r in running])[owner]
    progress = np.array([r.progress for r in running])[owner] - elapsed + k * step
    jobs = np.array([r.index for r in running], dtype=np.int64)[owner]
    keys = np.array([r.job.key for r in running], dtype=object)[owner]
    return pd.DataFrame(
        {
            "job": keys,
            "timestamp": view.now - elapsed + k * step,
            "value": usage.utilization(jobs, progress),
        }
    )


def blind_forecasts(view: TickView, planner: ReplayPlanner) -> dict[str, Forecast]:
    """Every running reclaimable job declared idle: what an allocation-based reclaim assumes."""
    return {
        r.job.key: Forecast(
            job=r.job.key,
            idle=True,
            confidence=1.0,
            predicted_idle_seconds=planner.horizon_seconds,
            horizon_seconds=planner.horizon_seconds,
            threshold=planner.threshold,
            method="allocation",
            samples=0,
        )
        for r in view.running
        if r.reclaimable
    }


def snapshot_of(view: TickView) -> Snapshot:
    return Snapshot(
        taken_at=view.now,
        queues=view.queues,
        jobs=tuple(r.job for r in view.running) + tuple(h.job for h in view.suspended),
        pods=tuple(p for r in view.running for p in r.pods),
        nodes=view.nodes,
        pending=view.pending,
        quality=DataQuality(metrics_at=view.now, complete=True),
        last_actions=view.last_actions,
        pod_gpus=view.pod_gpus,
    )


def device_name(node: str, device: int) -> str:
    return f"{node}/gpu{device}"


def make_job(
    key: str, queue: str, devices: tuple[str, ...], slots: int, start: float
) -> tuple[Job, tuple[Pod, ...]]:
    """The Job and its Pods (one per device, `slots` each), as the planner sees a trace pod.

    A trace pod stands for the suspendable jobs the reclaimer is made for (a PyTorchJob here),
    so a victim is suspended and resumed, not deleted.
    """
    namespace, _, name = key.partition("/")
    names = (name,) if len(devices) == 1 else tuple(f"{name}-{i}" for i in range(len(devices)))
    pods = tuple(
        Pod(
            key=f"{namespace}/{pod_name}",
            namespace=namespace,
            name=pod_name,
            node=device,
            gpus=slots,
            phase=PodPhase.RUNNING,
            job=key,
            start_time=start,
        )
        for pod_name, device in zip(names, devices, strict=True)
    )
    job = Job(
        key=key,
        kind=JobKind.PYTORCH_JOB,
        namespace=namespace,
        name=name,
        queue=queue,
        gpus=slots * len(devices),
        min_member=len(devices),
        start_time=start,
        pods=tuple(p.key for p in pods),
    )
    return job, pods


def suspended_job(
    key: str, queue: str, slots: int, count: int, since: float, *, stop_reason: str = ""
) -> Job:
    """A trace pod the reclaimer suspended, as the planner sees it: no pods, `count` to place,
    and the reason the plan stopped it for (`stop_reason`)."""
    namespace, _, name = key.partition("/")
    return Job(
        key=key,
        kind=JobKind.PYTORCH_JOB,
        namespace=namespace,
        name=name,
        queue=queue,
        gpus=slots * count,
        min_member=count,
        start_time=since,
        suspended=True,
        suspended_by_reclaimer=True,
        stop_reason=stop_reason,
    )
