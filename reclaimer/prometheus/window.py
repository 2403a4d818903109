"""A past window of per-pod GPU history: its queries and what a read of it holds. Pure.

The reader (`window_read.read_window`) fetches the per-pod utilization in chunks; the instant
queries here, over the whole window, add what the utilization alone does not say: how many GPUs
each pod held and on which node (distinct GPU UUIDs per pod), how many GPUs each node showed,
and each pod's Volcano queue where kube-state-metrics fed the `RECORDED_POD_QUEUE` rule; the
arrivals and the pending GPU demand come from kube-state-metrics (`prometheus.arrivals`).

Memory. `pod_memory_query` gives each pod's GPU memory on the utilization's grid: the exporter
writes one `gpu_pod_memory_used_bytes` series per (pod, container, device), so the containers
on a device are summed, each step keeps its most (`max_over_time`: an allocation fails at the
peak, not at the mean), and a pod on several devices reads its fullest one (the replay checks a
job's memory against one device). dcgm-exporter has no per-pod memory (its pod-labelled
`DCGM_FI_DEV_FB_USED` is the device's value copied to each pod), so that source has none.
`device_memory_query` gives each node's device memory from the device series: `FB_USED +
FB_FREE` (MiB) of one scrape (both `last_over_time` of the same label set, matched one to one,
so dcgm-exporter's per-pod copies pair with their own), de-duplicated per device (per MIG
instance, then summed per GPU, as the framebuffer lies on the instances: `gpu_contract.dcgm`),
and the node's smallest device. Under NVML's v2 memory struct (the exporter serves
`DCGM_FI_DEV_FB_RESERVED` then) `used + free` leaves the driver's reservation out: the memory
processes can hold. Under v1 `used` includes it, so the sum is the whole board, a few hundred
MiB more than processes can hold.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field

import pandas as pd

import gpu_contract as gc
from reclaimer.prometheus.arrivals import Arrivals
from reclaimer.prometheus.history import MetricsSource
from reclaimer.prometheus.series import QueryResult


@dataclass(frozen=True)
class Placement:
    """Where a pod ran over the window: its GPUs (distinct UUIDs) and its node."""

    gpus: int
    node: str


@dataclass(frozen=True)
class WindowRead:
    pods: pd.DataFrame  # namespace, pod, timestamp, value (NaN: allocated, unreadable)
    placements: Mapping[tuple[str, str], Placement]  # (namespace, pod) ->
    node_gpus: Mapping[str, int]  # Hostname -> GPUs seen over the window
    queues: Mapping[tuple[str, str], str]  # (namespace, pod) -> Volcano queue, where recorded
    arrivals: Arrivals  # creations and pending GPU demand (kube-state-metrics)
    recorded: bool  # the recording rules were read
    requests: int
    problems: tuple[str, ...]
    # namespace, pod, timestamp, value (bytes); None when the source has no per-pod memory
    memory: pd.DataFrame | None = None
    device_memory_mib: Mapping[str, float] = field(default_factory=dict)  # Hostname -> MiB


def placement_query(source: MetricsSource, window: float) -> str:
    """Per (namespace, pod, Hostname): distinct GPUs the pod held at any time in the window."""
    series = gc.DCGM_GPU_UTIL + '{pod!=""}' if source is MetricsSource.DCGM else gc.POD_ALLOCATED
    per_gpu = f"count by (namespace, pod, Hostname, UUID) (max_over_time({series}[{int(window)}s]))"
    return f"count by (namespace, pod, Hostname) ({per_gpu})"


def node_gpus_query(window: float) -> str:
    """Per Hostname: distinct GPUs that reported a utilization at any time in the window."""
    per_gpu = f"count by (Hostname, UUID) (max_over_time({gc.DCGM_GPU_UTIL}[{int(window)}s]))"
    return f"count by (Hostname) ({per_gpu})"


def pod_memory_query(step: float) -> str:
    """Per (namespace, pod): bytes on its fullest device, the most of each step (module doc)."""
    per_device = (
        "sum by (namespace, pod, Hostname, UUID, GPU_I_ID) "
        f"(max_over_time({gc.POD_MEMORY}[{int(step)}s]))"
    )
    return f"max by (namespace, pod) ({per_device})"


def device_memory_query(window: float) -> str:
    """Per Hostname: MiB of its smallest device, `FB_USED + FB_FREE` (module doc)."""
    rng = f"[{int(window)}s]"
    both = f"last_over_time({gc.DCGM_FB_USED}{rng}) + last_over_time({gc.DCGM_FB_FREE}{rng})"
    per_device = f"sum by (Hostname, UUID) (max by (Hostname, UUID, GPU_I_ID) ({both}))"
    return f"min by (Hostname) ({per_device})"


def device_memory(result: QueryResult) -> dict[str, float]:
    """Hostname -> MiB, from `device_memory_query`'s answer (NaN and non-positive left out)."""
    out: dict[str, float] = {}
    for s in result.series:
        host = s.labels.get("Hostname", "")
        if host and s.points and not math.isnan(s.points[-1][1]) and s.points[-1][1] > 0:
            out[host] = s.points[-1][1]
    return out


def queue_query(window: float) -> str:
    return (
        f"max by (namespace, pod, queue) (max_over_time({gc.RECORDED_POD_QUEUE}[{int(window)}s]))"
    )


def placements(result: QueryResult) -> dict[tuple[str, str], Placement]:
    """A pod seen on two nodes (recreated under the same name) keeps the one with most GPUs."""
    out: dict[tuple[str, str], Placement] = {}
    for s in sorted(result.series, key=lambda s: s.labels.get("Hostname", "")):
        if "pod" not in s.labels or not s.points:
            continue
        key = (s.labels.get("namespace", ""), s.labels["pod"])
        found = Placement(int(s.points[-1][1]), s.labels.get("Hostname", ""))
        if key not in out or found.gpus > out[key].gpus:
            out[key] = found
    return out
