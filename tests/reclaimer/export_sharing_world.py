"""Four hours of two time-sliced GPUs and a whole-GPU node, for `export-history` -> `simulate`.

ts-node-1 and ts-node-2 each hold one GPU with `DEVICE_MIB` of memory, which the NVIDIA device
plugin's default time-slicing config (`sharing.timeSlicing.resources[].replicas: 2`, applied to
every node, no per-node config label) advertises as 2 `nvidia.com/gpu`; the nodes carry no GPU
feature discovery labels, so the cluster reads them as 2 GPUs each. The exporter sees one
device per node. `serve/a` and `serve/b` share ts-node-1's GPU, `serve/c` and `serve/d`
ts-node-2's, from `START_H` hours ago for `RUN_H` hours, each 30% busy (two together run at
full speed in the replay) and holding `BASE_GIB`, except:
- b holds `OVER_GIB` for 20 minutes from `OVER_AT_S` into its run: `BASE_GIB + OVER_GIB`
  passes the device (an overflow);
- d holds `FIT_GIB` for 20 minutes from `FIT_AT_S` into its run: `BASE_GIB + FIT_GIB` is
  exactly the device (it fits).
`train/big-0` holds both 80 GiB GPUs of big-node (labelled by GPU feature discovery). The cluster
dump holds only the nodes, so every pod's queue is `unknown` (guaranteed) and its GPUs are the
devices Prometheus saw it hold. Series as gpu-exporter writes them: per (pod, container, device)
`gpu_pod_utilization_ratio`, `gpu_pod_allocated`, `gpu_pod_memory_used_bytes`; per device
`DCGM_FI_DEV_GPU_UTIL` (%), `DCGM_FI_DEV_FB_USED` / `_FB_FREE` (MiB, used capped at the device).
"""

from __future__ import annotations

import math
from typing import Any

from promserver import SeriesSpec, openmetrics

import gpu_contract as gc

STEP = 60.0
START_H, RUN_H = 5.0, 4.0
GIB = 2**30
DEVICE_MIB, BIG_MIB = 20 * 1024, 80 * 1024
BASE_GIB, OVER_GIB, FIT_GIB = 8, 13, 12
OVER_AT_S, FIT_AT_S, GROWN_S = 3 * 3600.0, 2 * 3600.0, 1200.0
SHARED = {"ts-node-1": ("serve/a", "serve/b"), "ts-node-2": ("serve/c", "serve/d")}
BIG_POD = "train/big-0"


def run_start(now: float) -> float:
    """When every pod's first sample was taken."""
    return math.floor((now - START_H * 3600) / STEP) * STEP


def gib_at(pod: str, since_start: float) -> int:
    """GiB the pod holds `since_start` seconds into its run."""
    if pod == BIG_POD:
        return 40
    grows = {"serve/b": (OVER_AT_S, OVER_GIB), "serve/d": (FIT_AT_S, FIT_GIB)}.get(pod)
    if grows and grows[0] <= since_start < grows[0] + GROWN_S:
        return grows[1]
    return BASE_GIB


def cluster_objects() -> list[dict[str, Any]]:
    def node(name: str, gpus: int, labels: dict[str, str]) -> dict[str, Any]:
        capacity = {"nvidia.com/gpu": str(gpus)}
        return {
            "apiVersion": "v1",
            "kind": "Node",
            "metadata": {"name": name, "labels": labels},
            "status": {"capacity": capacity, "allocatable": capacity},
        }

    return [
        node("ts-node-1", 2, {}),
        node("ts-node-2", 2, {}),
        node("big-node", 2, {"nvidia.com/gpu.count": "2", "nvidia.com/gpu.replicas": "1"}),
    ]


def _device(host: str, gpu: int, pods: tuple[str, ...], times: list[float]) -> list[SeriesSpec]:
    uuid, total = f"GPU-{host}-{gpu}", BIG_MIB if host == "big-node" else DEVICE_MIB
    dev = {"gpu": str(gpu), "UUID": uuid, "Hostname": host, "modelName": "NVIDIA Test"}
    used = [min(sum(gib_at(p, t - times[0]) for p in pods) * 1024, total) for t in times]
    busy = 90.0 if host == "big-node" else 60.0
    series: list[SeriesSpec] = [
        (gc.DCGM_GPU_UTIL, dev, [(t, busy) for t in times]),
        (gc.DCGM_FB_USED, dev, [(t, float(u)) for t, u in zip(times, used, strict=True)]),
        (gc.DCGM_FB_FREE, dev, [(t, float(total - u)) for t, u in zip(times, used, strict=True)]),
    ]
    for key in pods:
        namespace, pod = key.split("/")
        own = {"namespace": namespace, "pod": pod, "container": "w", "gpu": str(gpu)}
        own |= {"UUID": uuid, "Hostname": host}
        level = 0.9 if key == BIG_POD else 0.3
        series += [
            (gc.POD_UTILIZATION, own, [(t, level) for t in times]),
            (gc.POD_ALLOCATED, own, [(t, 1.0) for t in times]),
            (gc.POD_MEMORY, own, [(t, float(gib_at(key, t - times[0]) * GIB)) for t in times]),
        ]
    return series


def history(now: float) -> str:
    """OpenMetrics text of the four hours, one sample a minute."""
    start = run_start(now)
    times = [start + STEP * i for i in range(int(RUN_H * 3600 / STEP))]
    series: list[SeriesSpec] = []
    for host, pods in SHARED.items():
        series += _device(host, 0, pods, times)
    for gpu in range(2):
        series += _device("big-node", gpu, (BIG_POD,), times)
    return openmetrics(series)
