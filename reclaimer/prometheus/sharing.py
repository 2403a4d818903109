"""The sharing planner's Prometheus inputs: who shares which GPU, how busy, and node load. Pure.

Queries and their parsing only (`reads` sends them):
- Per (pod, device) readings, instant, over the stats window: `gpu_pod_allocated` lists every
  pod holding a device (its busy share unknown until `gpu_pod_utilization_ratio` has a sample),
  `gpu_pod_utilization_ratio` gives its busy share, `gpu_pod_memory_used_bytes` its memory. The
  exporter labels a pod's series with the physical GPU's `UUID` (a time-slice replica
  `GPU-<uuid>::<n>` counts as its device) and, on a MIG instance, its `GPU_I_ID`: the device is
  `UUID`, or `UUID/GPU_I_ID` for an instance. dcgm-exporter copies a device's readings onto each
  pod and has no per-pod share, so under the DCGM source these are not read (no contention relief).
- Pods' memory peaks for the raise gate's memory budget: each pod's most device memory over the
  last `PEAK_DAYS` (`max by (namespace, pod)`, over its GPUs and its restarts), read at the
  cycle's time once the hour has turned, with the load (the pods a raise lets in are new ones,
  and pods grow: the last minutes do not say).
- Node load history for the raise gate: each node's mean GPU utilization per hour over the last
  `LOAD_DAYS` (`max by (Hostname, UUID)` de-duplicates dcgm-exporter's per-pod copies), one
  `query_range` an hour (the controller keeps the last answer until the hour turns).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from types import MappingProxyType

import gpu_contract as gc
from reclaimer.model import LoadHistory, MemoryPeaks, PodGpuUsage
from reclaimer.prometheus.series import QueryResult

LOAD_STEP = 3600.0
LOAD_DAYS = 15.0  # the outlook's fit and calibration (14 days) plus a horizon
PEAK_DAYS = 7.0  # a week of pods: their peaks take in the weekly cycle
PEAK_WINDOW = PEAK_DAYS * 86400.0  # seconds
_DEVICE = ("Hostname", "UUID", "GPU_I_ID", "namespace", "pod")


def pod_gpu_queries(window: float) -> dict[str, str]:
    """Instant queries: one series per (node, device, pod), over the last `window` seconds."""
    by = f"max by ({', '.join(_DEVICE)})"
    rng = f"[{int(window)}s]"
    return {
        "held": f"{by} (max_over_time({gc.POD_ALLOCATED}{rng}))",
        "busy": f"{by} (avg_over_time({gc.POD_UTILIZATION}{rng}))",
        "memory": f"{by} (max_over_time({gc.POD_MEMORY}{rng}))",
    }


def pod_gpus(results: Mapping[str, QueryResult]) -> tuple[PodGpuUsage, ...]:
    """The per (pod, device) readings, sorted; a pod held but unmeasured reads busy None."""

    def by_key(name: str) -> dict[tuple[str, str, str], float]:
        out: dict[tuple[str, str, str], float] = {}
        for s in results[name].series:
            key = _key(s.labels)
            if key is not None and s.points and not math.isnan(s.points[-1][1]):
                out[key] = s.points[-1][1]
        return out

    held, busy, memory = by_key("held"), by_key("busy"), by_key("memory")
    rows = []
    for key in sorted(held.keys() | busy.keys()):
        node, device, pod = key
        share = busy.get(key)
        rows.append(
            PodGpuUsage(
                pod=pod,
                node=node,
                gpu=device,
                busy=None if share is None else min(1.0, max(0.0, share)),
                memory_bytes=memory.get(key),
            )
        )
    return tuple(rows)


def _key(labels: Mapping[str, str]) -> tuple[str, str, str] | None:
    node, uuid, pod = labels.get("Hostname", ""), labels.get("UUID", ""), labels.get("pod", "")
    if not (node and uuid and pod):
        return None
    instance = labels.get("GPU_I_ID", "")
    device = f"{uuid}/{instance}" if instance else uuid
    return node, device, f"{labels.get('namespace', '')}/{pod}"


def peaks_query() -> str:
    """Each pod's most device memory (bytes) over the last `PEAK_DAYS`."""
    return f"max by (namespace, pod) (max_over_time({gc.POD_MEMORY}[{int(PEAK_WINDOW)}s]))"


def memory_peaks(result: QueryResult) -> MemoryPeaks:
    """The pods' peaks from `peaks_query`'s answer ("namespace/pod" -> bytes; NaN left out)."""
    pods: dict[str, float] = {}
    for s in result.series:
        ns, pod = s.labels.get("namespace", ""), s.labels.get("pod", "")
        if pod and s.points and not math.isnan(s.points[-1][1]):
            pods[f"{ns}/{pod}"] = max(0.0, s.points[-1][1])
    return MemoryPeaks(PEAK_WINDOW, MappingProxyType(pods))


def load_query() -> str:
    """Each node's mean GPU utilization (ratio) over the hour before each evaluation time."""
    per_gpu = f"max by (Hostname, UUID) (avg_over_time({gc.DCGM_GPU_UTIL}[{int(LOAD_STEP)}s]))"
    return f"avg by (Hostname) ({per_gpu}) / 100"


def load_range(now: float) -> tuple[float, float]:
    """(first, last) evaluation time of the load query: whole hours, the last at or before now."""
    end = math.floor(now / LOAD_STEP) * LOAD_STEP
    return end - LOAD_DAYS * 86400.0 + LOAD_STEP, end


def load_histories(result: QueryResult, first: float, last: float) -> dict[str, LoadHistory]:
    """Node -> its load history on the hourly grid [first, last] (NaN where Prometheus had no
    sample); the value at evaluation time T covers the hour before T."""
    steps = round((last - first) / LOAD_STEP) + 1
    out: dict[str, LoadHistory] = {}
    for s in result.series:
        node = s.labels.get("Hostname", "")
        if not node or not s.points:
            continue
        values = [math.nan] * steps
        for t, v in s.points:
            i = round((t - first) / LOAD_STEP)
            if 0 <= i < steps:
                values[i] = min(1.0, max(0.0, v)) if not math.isnan(v) else math.nan
        out[node] = LoadHistory(first - LOAD_STEP, LOAD_STEP, tuple(values))
    return out
