"""A past window of per-pod GPU history: its queries and what a read of it holds. Pure.

The reader (`window_read.read_window`) fetches the per-pod utilization in chunks; the instant
queries here, over the whole window, add what the utilization alone does not say: how many GPUs
each pod held and on which node (distinct GPU UUIDs per pod), how many GPUs each node showed,
and each pod's Volcano queue where kube-state-metrics fed the `RECORDED_POD_QUEUE` rule; the
arrivals and the pending GPU demand come from kube-state-metrics (`prometheus.arrivals`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

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


def placement_query(source: MetricsSource, window: float) -> str:
    """Per (namespace, pod, Hostname): distinct GPUs the pod held at any time in the window."""
    series = gc.DCGM_GPU_UTIL + '{pod!=""}' if source is MetricsSource.DCGM else gc.POD_ALLOCATED
    per_gpu = f"count by (namespace, pod, Hostname, UUID) (max_over_time({series}[{int(window)}s]))"
    return f"count by (namespace, pod, Hostname) ({per_gpu})"


def node_gpus_query(window: float) -> str:
    """Per Hostname: distinct GPUs that reported a utilization at any time in the window."""
    per_gpu = f"count by (Hostname, UUID) (max_over_time({gc.DCGM_GPU_UTIL}[{int(window)}s]))"
    return f"count by (Hostname) ({per_gpu})"


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
