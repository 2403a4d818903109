"""A day of a small cluster's history for `export-history`, on `e2e_world`'s cluster.

gpu-node-1 (4 GPUs, still in the cluster) holds `research/sim-sweep-w-{0,1}` (idle all day) and
`research/train-w-{0,1}` (busy, a square wave 90% / 60% by the hour) from `START_H` hours ago
to a minute ago. `prod/llm-0` (2 GPUs, queue `prod`) ran on gpu-node-2 (2 GPUs) for `LLM_H`
hours in the middle of the day; the cluster no longer has that pod or that node, so its queue
comes from the recorded `namespace_pod:volcano_queue:info` and the node from dcgm's series.
Both metric sources are written: the exporter's per-pod families (with each pod's memory,
`POD_GIB`) and dcgm-exporter's `DCGM_FI_DEV_GPU_UTIL` (percent) and `DCGM_FI_DEV_FB_USED` /
`_FB_FREE` (MiB, `DEVICE_MIB` per node in all), with `pod`/`namespace` labels while a pod holds
the device.

kube-state-metrics' series say when pods were created and which waited: the research pods were
created before the window; `prod/llm-0` was created `WAIT_S` before it started and was Pending
until then; `prod/llm-1` (2 GPUs, queue `prod`) was created an hour after llm-0 started and is
still Pending, never having run. Names and labels as kube-state-metrics writes them
(`kube_pod_created`, `kube_pod_status_phase`, `kube_pod_container_resource_requests` with
`resource="nvidia_com_gpu"`, unit `integer`).
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
ALL_PODS = (*IDLE_PODS, *BUSY_PODS, GONE_POD)  # the pods that ran
NEVER_RAN_POD = "prod/llm-1"
WAIT_S = 1800.0  # llm-0's wait between its creation and its start
GIB = 2**30
POD_GIB = {**dict.fromkeys(IDLE_PODS, 2), **dict.fromkeys(BUSY_PODS, 30), GONE_POD: 50}
DEVICE_MIB = {"gpu-node-1": 40 * 1024, "gpu-node-2": 80 * 1024}


def llm_times(now: float) -> tuple[float, float]:
    """When llm-0 started running, and when llm-1 was created."""
    start = math.floor((now - START_H * 3600) / STEP) * STEP + LLM_FROM_H * 3600
    return start, start + 3600


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
    used, total = POD_GIB[key] * 1024, DEVICE_MIB[node]
    return [
        (gc.POD_UTILIZATION, own | {"Hostname": node}, [(t, level(t)) for t in times]),
        (gc.POD_ALLOCATED, own | {"Hostname": node}, [(t, 1.0) for t in times]),
        (gc.POD_MEMORY, own | {"Hostname": node}, [(t, float(POD_GIB[key] * GIB)) for t in times]),
        (gc.DCGM_GPU_UTIL, dcgm | {"container": "w"}, [(t, 100 * level(t)) for t in times]),
        (gc.DCGM_FB_USED, dcgm | {"container": "w"}, [(t, float(used)) for t in times]),
        (gc.DCGM_FB_FREE, dcgm | {"container": "w"}, [(t, float(total - used)) for t in times]),
    ]


def history(now: float) -> str:
    """OpenMetrics text of the day, samples on the minute grid up to a minute before `now`."""
    base = math.floor((now - START_H * 3600) / STEP) * STEP
    day = _grid(base, now - STEP)
    llm_start, _ = llm_times(now)
    llm = _grid(llm_start, llm_start + LLM_H * 3600)
    series: list[SeriesSpec] = []
    for gpu, key in enumerate(IDLE_PODS):
        series += _pod_series(key, "gpu-node-1", gpu + 2, day, lambda t: 0.0)
    for gpu, key in enumerate(BUSY_PODS):
        series += _pod_series(key, "gpu-node-1", gpu, day, _train)
    for gpu in range(2):
        series += _pod_series(GONE_POD, "gpu-node-2", gpu, llm, lambda t: 0.5)
    queue = {"namespace": "prod", "pod": "llm-0", "queue": "prod"}
    series.append((gc.RECORDED_POD_QUEUE, queue, [(t, 1.0) for t in llm]))
    return openmetrics(series + _kube_state(now, base, day))


def _ksm_pod(
    key: str, created: float, pending_until: float, times: list[float]
) -> list[SeriesSpec]:
    """One pod's kube-state-metrics series over `times`, 2 GPUs requested by container w."""
    namespace, pod = key.split("/")
    ident = {"namespace": namespace, "pod": pod, "uid": f"uid-{pod}"}
    gpus = ident | {"container": "w", "resource": "nvidia_com_gpu", "unit": "integer"}
    pending = ident | {"phase": "Pending"}
    return [
        ("kube_pod_created", ident, [(t, created) for t in times]),
        ("kube_pod_container_resource_requests", gpus, [(t, 2.0) for t in times]),
        ("kube_pod_status_phase", pending, [(t, float(t < pending_until)) for t in times]),
    ]


def _kube_state(now: float, base: float, day: list[float]) -> list[SeriesSpec]:
    llm_start, llm1_created = llm_times(now)
    series: list[SeriesSpec] = []
    for key in (*IDLE_PODS, *BUSY_PODS):  # created before the window: arrive at their start
        namespace, pod = key.split("/")
        ident = {"namespace": namespace, "pod": pod, "uid": f"uid-{pod}"}
        series.append(("kube_pod_created", ident, [(t, base - 7200) for t in day]))
    llm0 = _grid(llm_start - WAIT_S, llm_start + LLM_H * 3600)
    series += _ksm_pod(GONE_POD, llm_start - WAIT_S, llm_start, llm0)
    llm1 = _grid(llm1_created, now - STEP)
    series += _ksm_pod(NEVER_RAN_POD, llm1_created, math.inf, llm1)
    queue = {"namespace": "prod", "pod": "llm-1", "queue": "prod"}
    series.append((gc.RECORDED_POD_QUEUE, queue, [(t, 1.0) for t in llm1]))
    return series
