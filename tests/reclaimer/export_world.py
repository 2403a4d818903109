"""A day of a small cluster's history for `export-history`, on `e2e_world`'s cluster.

gpu-node-1 (4 GPUs, still in the cluster) holds `research/sim-sweep-w-{0,1}` (idle all day) and
`research/train-w-{0,1}` (busy, a square wave 90% / 60% by the hour) from `START_H` hours ago
to a minute ago. `prod/llm-0` (2 GPUs, queue `prod`) ran on gpu-node-2 (2 GPUs) for `LLM_H`
hours in the middle of the day; the cluster no longer has that pod or that node, so its queue
comes from the recorded `namespace_pod:volcano_queue:info` and the node from dcgm's series.
Both metric sources are written: the exporter's per-pod families and dcgm-exporter's
`DCGM_FI_DEV_GPU_UTIL` (percent, `pod`/`namespace` labels while a pod holds the device).
"""

from __future__ import annotations

import math
from collections.abc import Callable

from promserver import SeriesSpec, openmetrics

import gpu_contract as gc

STEP = 60.0
START_H, LLM_FROM_H, LLM_H = 23.0, 11.0, 6.0
IDLE_PODS = ("research/sim-sweep-w-0", "research/sim-sweep-w-1")
BUSY_PODS = ("research/train-w-0", "research/train-w-1")
GONE_POD = "prod/llm-0"
ALL_PODS = (*IDLE_PODS, *BUSY_PODS, GONE_POD)


def _train(t: float) -> float:
    return 0.9 if int(t // 3600) % 2 == 0 else 0.6


def _grid(start: float, end: float) -> list[float]:
    return [start + STEP * i for i in range(int((end - start) // STEP) + 1)]


def _pod_series(
    key: str, node: str, gpu: int, times: list[float], level: Callable[[float], float]
) -> list[SeriesSpec]:
    namespace, pod = key.split("/")
    uuid = f"GPU-{node}-{gpu}"
    own = {"namespace": namespace, "pod": pod, "container": "w", "gpu": str(gpu), "UUID": uuid}
    dcgm = {"gpu": str(gpu), "UUID": uuid, "Hostname": node, "namespace": namespace, "pod": pod}
    return [
        (gc.POD_UTILIZATION, own | {"Hostname": node}, [(t, level(t)) for t in times]),
        (gc.POD_ALLOCATED, own | {"Hostname": node}, [(t, 1.0) for t in times]),
        (gc.DCGM_GPU_UTIL, dcgm | {"container": "w"}, [(t, 100 * level(t)) for t in times]),
    ]


def history(now: float) -> str:
    """OpenMetrics text of the day, samples on the minute grid up to a minute before `now`."""
    base = math.floor((now - START_H * 3600) / STEP) * STEP
    day = _grid(base, now - STEP)
    llm = _grid(base + LLM_FROM_H * 3600, base + (LLM_FROM_H + LLM_H) * 3600)
    series: list[SeriesSpec] = []
    for gpu, key in enumerate(IDLE_PODS):
        series += _pod_series(key, "gpu-node-1", gpu + 2, day, lambda t: 0.0)
    for gpu, key in enumerate(BUSY_PODS):
        series += _pod_series(key, "gpu-node-1", gpu, day, _train)
    for gpu in range(2):
        series += _pod_series(GONE_POD, "gpu-node-2", gpu, llm, lambda t: 0.5)
    queue = {"namespace": "prod", "pod": "llm-0", "queue": "prod"}
    series.append((gc.RECORDED_POD_QUEUE, queue, [(t, 1.0) for t in llm]))
    return openmetrics(series)
