"""The PromQL of a history read, its time grid, and the planner's node GPU stats.

Theory of operation. PromQL does the per-pod work: one query aggregates each pod's GPU series to
one series per (namespace, pod), fetched by `query_range` on a step-aligned grid, in time chunks
under Prometheus' 11,000-points-per-series limit, for the pods a request names
(`reclaimer.prometheus.reads` sizes the requests, `reclaimer.prometheus.fold` writes the answers
into the per-pod float32 history). Three instant queries give per-GPU node stats. The first read
fetches the whole window (24 h by default); later reads pass the previous per-pod history and
fetch only the steps since its newest point (plus `refetch_steps` re-read, as the newest steps
may have been computed before the last scrape landed), so a steady-state cycle moves a few points
per pod, not a day of them. `pod_frame` / `job_frame` give the same data as long pandas frames,
for callers that want one. Per source:

- gpu-reclaim (our exporter): `gpu_pod_utilization_ratio`, joined with `gpu_pod_allocated` by `or
  on (namespace, pod) -1 * ...`. The exporter reports 0 for a pod holding a GPU and running
  nothing, and leaves the utilization sample out when it cannot read the GPU (while the allocation
  stays): the -1 marks that "allocated, unreadable" step (`fold.UNREADABLE`), so it can never
  pass for idle (`reclaimer.prometheus.coverage`). The recording rules
  `RECORDED_POD_UTILIZATION_5M` / `RECORDED_POD_ALLOCATED` are used instead when Prometheus has
  them and has had them for the whole window (the controller probes at start, then hourly until
  they do): rules deployed a minute ago have a minute of history, which no forecaster can use.
- dcgm: dcgm-exporter's `DCGM_FI_DEV_GPU_UTIL` series that carry a `pod` label, percent / 100.
  `--kubernetes-virtual-gpus` copies the device value to every sharing pod under the same name,
  so series are combined with `max`, never `sum` (see below).

A pod on several GPUs counts as busy as its busiest GPU, and a job as busy as its busiest pod
(`max`, not `mean`): the reclaimer only acts on jobs that are idle everywhere, so one working
rank keeps its whole gang. A NaN on any of a pod's GPUs makes the pod's step NaN (`busiest`:
PromQL's `max` alone would skip it), that is unreadable: unknown, never idle. A job whose
recent usage is unknown (`prometheus.coverage`: a sample missing or unreadable over the last
horizon, or none within `max_age`) is left out of the job history (no forecast) and listed with
its reason, so a node whose exporter went quiet or a GPU NVML cannot read never makes its jobs
look idle. dcgm-exporter's copies are combined with `max`; the `sum` only carries the NaN.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from enum import StrEnum

import numpy as np
import numpy.typing as npt
import pandas as pd

import gpu_contract as gc
from reclaimer.forecast.history import History
from reclaimer.forecast.params import ForecastParams
from reclaimer.model import CLOCK_SKEW_TOLERANCE_S, ClusterView, GpuStats
from reclaimer.policy.settings import Policy
from reclaimer.prometheus.coverage import Recent
from reclaimer.prometheus.fold import UNREADABLE, jobs_of, pod_history_of
from reclaimer.prometheus.series import QueryResult

_POLICY = Policy()
PROMETHEUS_MAX_POINTS = 11_000


class MetricsSource(StrEnum):
    GPU_RECLAIM = "gpu-reclaim"
    DCGM = "dcgm"


@dataclass(frozen=True)
class HistoryParams:
    window: float = ForecastParams.lookback_seconds  # history kept: what the forecaster reads
    step: float = 60.0  # seconds between points; also the averaging window per point
    max_points: int = 10_000  # per series per request, under PROMETHEUS_MAX_POINTS
    stats_window: float = 600.0  # seconds averaged for node GPU stats
    max_age: float = _POLICY.max_data_age_seconds  # newest sample older: the data is stale
    horizon: float = _POLICY.horizon_seconds  # every sample of this recent span must be there
    refetch_steps: int = 5  # later cycles re-read this many recent steps (late scrapes)
    # The freshness query looks this far past now, for samples dated after the controller's
    # clock (more than CLOCK_SKEW_TOLERANCE_S: the cycle is gated).
    lookahead: float = 2 * CLOCK_SKEW_TOLERANCE_S
    points_per_request: int = 100_000  # pods x steps per history answer: bounds the JSON held
    # Pods named per history request: Prometheus looks a regex of at most 256 alternatives up as
    # a set, a longer one is matched against every pod name (model/labels/regexp.go).
    pods_per_request: int = 256
    requests_in_flight: int = 2  # history answers fetched (and held) at once
    # Recorded series replace the raw ones only once they are this old (None: the whole window),
    # so a fresh rules install never shortens the forecaster's history.
    recorded_min_age: float | None = None

    @property
    def recorded_coverage(self) -> float:
        return self.window if self.recorded_min_age is None else self.recorded_min_age


MIB = 1024.0**2
POD_COLUMNS = ["namespace", "pod", "timestamp", "value"]
JOB_COLUMNS = ["job", "timestamp", "value"]


def align(t: float, step: float) -> float:
    """The latest multiple of `step` at or before `t`: the same grid every cycle."""
    return math.floor(t / step) * step


def time_chunks(
    start: float, end: float, step: float, max_points: int
) -> list[tuple[float, float]]:
    """Split [start, end] on the `step` grid into ranges of at most `max_points` points each."""
    if step <= 0 or max_points < 1 or not 0 < max_points <= PROMETHEUS_MAX_POINTS:
        raise ValueError("step must be > 0 and 1 <= max_points <= 11000")
    chunks = []
    s = start
    while s <= end:
        e = min(end, s + (max_points - 1) * step)
        chunks.append((s, e))
        s = e + step
    return chunks


def recorded_probe_query(min_age: float) -> str:
    """Non-empty when both recorded series exist now and already existed `min_age` ago."""
    util, alloc = gc.RECORDED_POD_UTILIZATION_5M, gc.RECORDED_POD_ALLOCATED
    off = f"offset {int(min_age)}s"
    return f"count({util}) and count({alloc}) and count({util} {off}) and count({alloc} {off})"


def pod_utilization_query(
    source: MetricsSource, recorded: bool, step: float, pods: str = ""
) -> str:
    """One PromQL expression giving one series per (namespace, pod), value ratio 0..1; `pods`
    is an extra label matcher (`fold.pod_selector`) naming the pods of one request."""
    rng = f"[{int(step)}s]"
    by = "max by (namespace, pod)"
    sel = f"{{{pods}}}" if pods else ""
    if source is MetricsSource.DCGM:
        util = gc.DCGM_GPU_UTIL
        extra = f",{pods}" if pods else ""
        per_gpu = f'avg_over_time({util}{{pod!=""{extra}}}{rng})'
        return f"({busiest(per_gpu)}) / 100"
    if recorded:
        util_rec, alloc_rec = gc.RECORDED_POD_UTILIZATION_5M, gc.RECORDED_POD_ALLOCATED
        return (
            f"({busiest(util_rec + sel)})"
            f" or on (namespace, pod) ({UNREADABLE:g} * {by} ({alloc_rec}{sel}))"
        )
    util, alloc = gc.POD_UTILIZATION, gc.POD_ALLOCATED
    per_gpu = f"avg_over_time({util}{sel}{rng})"
    return (
        f"({busiest(per_gpu)})"
        f" or on (namespace, pod) ({UNREADABLE:g} * {by} (max_over_time({alloc}{sel}{rng})))"
    )


def busiest(per_gpu: str) -> str:
    """Each pod's busiest GPU of `per_gpu`, NaN when any of its GPUs is NaN.

    PromQL's `max` skips NaN (promql/engine.go: a NaN is replaced by any number), so a pod
    whose one GPU reads NaN and another 0 would read 0, idle. `sum` keeps NaN, so adding
    `0 * sum` turns such a pod NaN, which the fold reads as unreadable (unknown, never idle).
    """
    return f"max by (namespace, pod) ({per_gpu}) + 0 * sum by (namespace, pod) ({per_gpu})"


def freshness_query(source: MetricsSource, lookahead: float) -> str:
    """Time of the newest raw sample the utilization comes from, evaluated `lookahead` seconds
    after now (`reads.read_metrics`): a sample dated after the controller's clock is seen, so
    `plan.data_gate` can tell the clocks disagree. The `offset` branch answers as a query at now
    would (the 5-minute lookback back from now), when nothing is newer than the lookback."""
    metric = gc.DCGM_GPU_UTIL if source is MetricsSource.DCGM else gc.POD_ALLOCATED
    return f"max(timestamp({metric})) or max(timestamp({metric} offset {int(lookahead)}s))"


def node_stats_queries(window: float) -> dict[str, str]:
    """Per-GPU (Hostname, UUID) stats; max de-duplicates dcgm's per-pod copies. A MIG-enabled
    GPU's memory is on its instances only (gpu_contract.dcgm.MigScope): summed per GPU."""
    by = "max by (Hostname, UUID)"
    per_gpu = "sum by (Hostname, UUID) (max by (Hostname, UUID, GPU_I_ID)"
    rng = f"[{int(window)}s]"
    return {
        "util": f"{by} (avg_over_time({gc.DCGM_GPU_UTIL}{rng}))",
        "used": f"{per_gpu} ({gc.DCGM_FB_USED}))",
        "free": f"{per_gpu} ({gc.DCGM_FB_FREE}))",
    }


def pod_frame(results: Iterable[QueryResult]) -> pd.DataFrame:
    """Matrix results (one series per namespace/pod) -> long frame; unreadable points are NaN.

    Values are ratios, clipped to 0..1; a negative value (`fold.UNREADABLE`) reads NaN.
    """
    frame = series_frame(results)
    values = frame["value"].to_numpy(dtype=np.float64)
    frame["value"] = np.where(values < 0, np.nan, np.clip(values, 0.0, 1.0))
    return frame


def series_frame(results: Iterable[QueryResult]) -> pd.DataFrame:
    """Matrix results (one series per namespace/pod) -> long frame of the values as answered.

    Built column-wise with numpy: a fleet read is millions of points. Series without a `pod`
    label are ignored; chunks never overlap, and `by (namespace, pod)` makes series unique.
    """
    namespaces: list[str] = []
    names: list[str] = []
    counts: list[int] = []
    arrays: list[npt.NDArray[np.float64]] = []
    for r in results:
        for s in r.series:
            if s.labels.get("pod") and s.points:
                namespaces.append(s.labels.get("namespace", ""))
                names.append(s.labels["pod"])
                counts.append(len(s.points))
                arrays.append(np.asarray(s.points, dtype=np.float64))
    if not arrays:
        return pd.DataFrame(
            {c: pd.Series(dtype=str if c in ("namespace", "pod") else float) for c in POD_COLUMNS}
        )
    points = np.concatenate(arrays)
    return pd.DataFrame(
        {
            "namespace": np.repeat(np.array(namespaces, dtype=object), counts),
            "pod": np.repeat(np.array(names, dtype=object), counts),
            "timestamp": points[:, 0],
            "value": points[:, 1],
        }
    )


def fetch_start(
    previous: History | pd.DataFrame | None, now: float, params: HistoryParams
) -> float:
    """First grid time to fetch: the whole window, or only the tail the previous read lacks."""
    window_start = align(now - params.window, params.step)
    if isinstance(previous, History):
        newest = previous.newest() if previous.step == params.step else None
    elif previous is not None and not previous.empty:
        newest = float(previous["timestamp"].max())
    else:
        newest = None
    if newest is None:
        return window_start
    return max(window_start, align(newest - params.refetch_steps * params.step, params.step))


@dataclass(frozen=True)
class JobHistory:
    frame: pd.DataFrame  # JOB_COLUMNS, jobs with known usage only
    problems: tuple[str, ...] = ()
    unknown: Mapping[str, str] = field(default_factory=dict)  # job key -> why, left out


def job_frame(pods: pd.DataFrame, view: ClusterView, recent: Recent) -> JobHistory:
    """Per-pod history frame -> per-job history frame (max over the job's pods at each step),
    for the jobs whose recent usage is known: `fold.jobs_of` on the long frames."""
    jobs, unknown = jobs_of(pod_history_of(pods), view, recent)
    return JobHistory(jobs.to_frame(), unknown_problems(unknown), unknown)


def unknown_problems(unknown: Mapping[str, str]) -> tuple[str, ...]:
    """The read's problem line for jobs whose usage is unknown (none when all are known)."""
    return (f"{len(unknown)} job(s) with unknown usage, never taken as idle",) if unknown else ()


def node_stats(results: Mapping[str, QueryResult]) -> dict[str, tuple[GpuStats, ...]]:
    """Hostname -> per-GPU stats (sorted by UUID); GPUs missing a memory series read 0 memory
    as a ratio and None in bytes (the raise gate refuses on unread memory)."""

    def by_gpu(key: str) -> dict[tuple[str, str], float]:
        out = {}
        for s in results[key].series:
            if s.points and not math.isnan(s.points[-1][1]):
                out[(s.labels.get("Hostname", ""), s.labels.get("UUID", ""))] = s.points[-1][1]
        return out

    util, used, free = by_gpu("util"), by_gpu("used"), by_gpu("free")
    stats: dict[str, list[tuple[str, GpuStats]]] = {}
    for (host, uuid), u in sorted(util.items()):
        total = used.get((host, uuid), 0.0) + free.get((host, uuid), 0.0)
        mem = used.get((host, uuid), 0.0) / total if total > 0 else 0.0
        read = (host, uuid) in used and (host, uuid) in free and total > 0  # FB_* are MiB
        used_b, total_b = (used[(host, uuid)] * MIB, total * MIB) if read else (None, None)
        gpu = GpuStats(min(1.0, max(0.0, u / 100)), mem, uuid, used_b, total_b)
        stats.setdefault(host, []).append((uuid, gpu))
    return {host: tuple(g for _, g in gpus) for host, gpus in stats.items()}
