"""A time-sliced GPU whose two guaranteed pods were busy at the same minutes all day, and matching
Prometheus readings, for the end-to-end test of the contention rule (`plan.contend`).

The device plugin's ConfigMap (`gpu-operator/time-slicing-config`, the reclaimer's default) has
one key, `ts-2`: 2 replicas of `nvidia.com/gpu`. Pods are bare pods (each its own gang).
- gpu-ts-busy (one 16 GiB T4, `ts-2`): `prod/serve-a` and `prod/serve-b` hold its two
  replicas; `prod` is a Volcano queue that is not reclaimable, so both are guaranteed.
- Their per-pod utilization (`gpu_pod_utilization_ratio`, labelled with the physical GPU's
  UUID as the exporter labels a time-slice replica) over the last day, every 30 s: each busy
  (40%) for ten minutes in twenty, `serve-b` five minutes after `serve-a`: half of each one's
  busy time is beside the other's, a co-busy share of 50%.
- Device readings (busy 50%, in the load band: no load rule moves the node; 6 GiB used) and
  the pods' allocation and memory (3 GiB: they fit; two pods are too few for a memory budget)
  cover the last 20 minutes.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from budget_world import DAY, MIB, TS2, gpu_node, gpu_pod, ts_config, volcano_queue
from promserver import SeriesSpec, openmetrics

import gpu_contract as gc

NODE = "gpu-ts-busy"
PODS = ("prod/serve-a", "prod/serve-b")
BUSY = 0.4


def cluster_objects(now: float) -> list[dict[str, Any]]:
    queue = volcano_queue("prod", 2, reclaimable=False)
    pods = (gpu_pod(key, NODE, now) for key in PODS)
    return [queue, ts_config({"ts-2": TS2}), gpu_node(NODE), *pods]


def _busy(t: float, late: float) -> float:
    """Ten minutes busy, ten idle, `late` seconds after the clock's whole 20 minutes."""
    return BUSY if ((t - late) // 600) % 2 == 0 else 0.0


def history(now: float) -> str:
    day = [float(t) for t in np.arange(now - DAY, now - 15.0, 30.0)]
    recent = [t for t in day if t >= now - 1200]
    dev = {"gpu": "0", "UUID": f"GPU-{NODE}", "Hostname": NODE}
    series: list[SeriesSpec] = [
        (gc.DCGM_GPU_UTIL, dev | {"modelName": "Tesla T4"}, [(t, 50.0) for t in recent]),
        (gc.DCGM_FB_USED, dev | {"modelName": "Tesla T4"}, [(t, 6 * 1024.0) for t in recent]),
        (gc.DCGM_FB_FREE, dev | {"modelName": "Tesla T4"}, [(t, 10 * 1024.0) for t in recent]),
    ]
    for key, late in zip(PODS, (0.0, 300.0), strict=True):
        ns, name = key.split("/")
        lab = {"namespace": ns, "pod": name, "container": "main", **dev}
        series.append((gc.POD_UTILIZATION, lab, [(t, _busy(t, late)) for t in day]))
        series.append((gc.POD_ALLOCATED, lab, [(t, 1.0) for t in recent]))
        series.append((gc.POD_MEMORY, lab, [(t, 3 * 1024 * MIB) for t in recent]))
    return openmetrics(series)


def idle_pods(now: float, count: int, hours: float) -> list[SeriesSpec]:
    """`count` pods of the `batch` namespace, each on a GPU of a node the cluster no longer
    has, present at utilization 0 for `hours` until half an hour ago (a sample every 4
    minutes, within Prometheus' 5-minute lookback): the idle time of the fleet, whose busy share
    b lets a raise to R replicas through the contention rule while 1 - (1 - b)^(R - 1) stays
    within `maxCobusyShare`. They end before the per-pod readings' 10-minute window, so no GPU
    of the world holds them."""
    end = now - 1800.0
    times = [float(t) for t in np.arange(end - hours * 3600.0, end, 240.0)]
    return [
        (
            gc.POD_UTILIZATION,
            {
                "namespace": "batch",
                "pod": f"idle-{k}",
                "container": "main",
                "UUID": f"GPU-gone-{k}",
                "Hostname": "gpu-gone",
            },
            [(t, 0.0) for t in times],
        )
        for k in range(count)
    ]
