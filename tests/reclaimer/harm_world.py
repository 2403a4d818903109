"""A time-sliced cluster where sharing does harm, and matching Prometheus readings, for the
end-to-end tests of `plan.harm` and `plan.handback`.

The device plugin's ConfigMap (`gpu-operator/time-slicing-config`, the reclaimer's default) has
one key, `ts-2`: 2 replicas of `nvidia.com/gpu`. Pods are bare pods (each its own gang).
- gpu-ts-crash (1 GPU, `ts-2`): `prod/infer-0` runs; `research/tune-0` beside it was
  OOM-killed five minutes ago and restarted (its `lastState.terminated`, as the kubelet
  writes it: k8s.io/api core/v1 `ContainerStateTerminated`, reason `OOMKilled`, exit 137).
- gpu-ts-pool (4 GPUs, `ts-2`): `research/nb-0` holds one replica.
- gpu-whole (4 GPUs, no config label and no GPU operator ClusterPolicy: whole GPUs): all four
  held by `prod/train-0`.
- `prod/big`: a PodGroup of one pod of 2 GPUs, pending for an hour (queue `prod`).
Per-pod readings (allocated, busy 20%, 3 GiB) and the GPUs' readings cover the last 20 minutes.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import numpy as np
from budget_world import gpu_pod
from promserver import openmetrics

import gpu_contract as gc

VOLCANO = "scheduling.volcano.sh/v1beta1"
CRASH_NODE, POOL_NODE, WHOLE_NODE = "gpu-ts-crash", "gpu-ts-pool", "gpu-whole"
CRASHED = "research/tune-0"
PENDING = "prod/big"
TS2 = """version: v1
sharing:
  timeSlicing:
    resources:
    - name: nvidia.com/gpu
      replicas: 2
"""
MIB = 1024.0**2
PODS = {  # pod key -> (node, GPUs, the GPU index its readings name)
    "prod/infer-0": (CRASH_NODE, 1, 0),
    CRASHED: (CRASH_NODE, 1, 0),
    "research/nb-0": (POOL_NODE, 1, 0),
    "prod/train-0": (WHOLE_NODE, 4, 0),
}


def ts(t: float) -> str:
    return datetime.fromtimestamp(t, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _node(name: str, gpus: int, key: str | None) -> dict[str, Any]:
    replicas = 2 if key else 1
    labels = {"nvidia.com/gpu.count": str(gpus), "nvidia.com/gpu.replicas": str(replicas)}
    if key:
        labels["nvidia.com/device-plugin.config"] = key
    offered = {"nvidia.com/gpu": str(gpus * replicas)}
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": labels},
        "status": {"capacity": offered, "allocatable": offered},
    }


def _pod(key: str, now: float) -> dict[str, Any]:
    node, gpus, _ = PODS[key]
    pod = gpu_pod(key, node, now, gpus)
    if key == CRASHED:
        ended = {"exitCode": 137, "reason": "OOMKilled", "finishedAt": ts(now - 300)}
        (status,) = pod["status"]["containerStatuses"]
        status |= {"restartCount": 3, "lastState": {"terminated": ended}}
        status["state"] = {"running": {"startedAt": ts(now - 290)}}
    return pod


def cluster_objects(now: float) -> list[dict[str, Any]]:
    queues = [
        {
            "apiVersion": VOLCANO,
            "kind": "Queue",
            "metadata": {"name": name},
            "spec": {"deserved": {"nvidia.com/gpu": "4"}, "reclaimable": reclaimable},
            "status": {"state": "Open"},
        }
        for name, reclaimable in (("research", True), ("prod", False))
    ]
    config = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": "time-slicing-config", "namespace": "gpu-operator"},
        "data": {"ts-2": TS2},
    }
    pending = {
        "apiVersion": VOLCANO,
        "kind": "PodGroup",
        "metadata": {"name": "big", "namespace": "prod", "creationTimestamp": ts(now - 3600)},
        "spec": {"minMember": 1, "queue": "prod", "minResources": {"nvidia.com/gpu": "2"}},
        "status": {"phase": "Pending"},
    }
    nodes = [_node(CRASH_NODE, 1, "ts-2"), _node(POOL_NODE, 4, "ts-2"), _node(WHOLE_NODE, 4, None)]
    return [*queues, config, *nodes, pending, *(_pod(k, now) for k in PODS)]


def _device(node: str, gpu: int) -> dict[str, str]:
    return {"gpu": str(gpu), "UUID": f"GPU-{node}-{gpu}", "Hostname": node}


def history(now: float) -> str:
    recent = [float(t) for t in np.arange(now - 1200, now - 15.0, 30.0)]
    series = []
    for node, gpus in ((CRASH_NODE, 1), (POOL_NODE, 4), (WHOLE_NODE, 4)):
        for g in range(gpus):
            dev = _device(node, g) | {"modelName": "Tesla T4"}
            series.append((gc.DCGM_GPU_UTIL, dev, [(t, 50.0) for t in recent]))
            series.append((gc.DCGM_FB_USED, dev, [(t, 6 * 1024.0) for t in recent]))
            series.append((gc.DCGM_FB_FREE, dev, [(t, 10 * 1024.0) for t in recent]))
    for key, (node, _, gpu) in PODS.items():
        ns, name = key.split("/")
        lab = {"namespace": ns, "pod": name, "container": "main", **_device(node, gpu)}
        series.append((gc.POD_ALLOCATED, lab, [(t, 1.0) for t in recent]))
        series.append((gc.POD_UTILIZATION, lab, [(t, 0.2) for t in recent]))
        series.append((gc.POD_MEMORY, lab, [(t, 3 * 1024 * MIB) for t in recent]))
    return openmetrics(series)
