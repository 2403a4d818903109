"""A cluster where a wrong stop is easy: one 4-GPU node, an idle and a busy PyTorchJob, and a
guaranteed job waiting; with 24 h of matching history.

gpu-node-1's 4 GPUs are all held by the reclaimable queue `research`: `research/notebook` (one
pod, 2 GPUs) has been idle for a day, `research/train` (one pod, 2 GPUs) is busy. `prod/llm`
(PodGroup, 2 GPUs, queue `prod`, owed 2 GPUs) has waited 30 minutes. With `reclaimBusyAfter: 10m`
the busy job is fair game once no idle one can make room, which is what makes room in flight
matter. Timestamps are relative to `now`.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import numpy as np
from promserver import openmetrics

import gpu_contract as gc

IDLE, BUSY, PENDING = "research/notebook", "research/train", "prod/llm"
HISTORY_S = 24 * 3600
POLICY = "reclaimBusyAfter: 10m\nreleaseTimeout: 10m\n"


def ts(t: float) -> str:
    return datetime.fromtimestamp(t, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _pytorchjob(name: str, uid: str, created: float) -> list[dict[str, Any]]:
    owner = {
        "apiVersion": "kubeflow.org/v1",
        "kind": "PyTorchJob",
        "name": name,
        "controller": True,
        "uid": uid,
    }
    container = {
        "name": "pytorch",
        "image": "train:1",
        "resources": {"limits": {"nvidia.com/gpu": "2"}},
    }
    meta = {"namespace": "research", "creationTimestamp": ts(created)}
    return [
        {
            "apiVersion": "kubeflow.org/v1",
            "kind": "PyTorchJob",
            "metadata": {"name": name, "uid": uid, **meta},
            "spec": {
                "runPolicy": {"schedulingPolicy": {"queue": "research", "minAvailable": 1}},
                "pytorchReplicaSpecs": {
                    "Master": {"replicas": 1, "template": {"spec": {"containers": [container]}}}
                },
            },
            "status": {"startTime": ts(created + 5), "conditions": [_true("Running")]},
        },
        {
            "apiVersion": "scheduling.volcano.sh/v1beta1",
            "kind": "PodGroup",
            "metadata": {"name": name, "ownerReferences": [owner], **meta},
            "spec": {"minMember": 1, "queue": "research"},
            "status": {"phase": "Running"},
        },
        {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {
                "name": f"{name}-master-0",
                "uid": f"{uid}-0",
                "labels": {"training.kubeflow.org/job-name": name, "app": name},
                "annotations": {"scheduling.k8s.io/group-name": name},
                "ownerReferences": [owner],
                **meta,
            },
            "spec": {"nodeName": "gpu-node-1", "containers": [container]},
            "status": {"phase": "Running", "startTime": ts(created + 30)},
        },
    ]


def _true(kind: str) -> dict[str, str]:
    return {"type": kind, "status": "True"}


def _queue(name: str, reclaimable: bool) -> dict[str, Any]:
    return {
        "apiVersion": "scheduling.volcano.sh/v1beta1",
        "kind": "Queue",
        "metadata": {"name": name},
        "spec": {"weight": 1, "deserved": {"nvidia.com/gpu": "2"}, "reclaimable": reclaimable},
        "status": {"state": "Open"},
    }


def cluster_objects(now: float) -> list[dict[str, Any]]:
    created = now - HISTORY_S - 3600
    return [
        _queue("research", True),
        _queue("prod", False),
        {
            "apiVersion": "v1",
            "kind": "Node",
            "metadata": {"name": "gpu-node-1", "labels": {"nvidia.com/gpu.count": "4"}},
            "status": {"capacity": {"nvidia.com/gpu": "4"}, "allocatable": {"nvidia.com/gpu": "4"}},
        },
        *_pytorchjob("notebook", "11111111-0000-0000-0000-00000000000a", created),
        *_pytorchjob("train", "22222222-0000-0000-0000-00000000000b", created),
        {
            "apiVersion": "scheduling.volcano.sh/v1beta1",
            "kind": "PodGroup",
            "metadata": {"name": "llm", "namespace": "prod", "creationTimestamp": ts(now - 1800)},
            "spec": {"minMember": 1, "queue": "prod", "minResources": {"nvidia.com/gpu": "2"}},
            "status": {"phase": "Inqueue"},
        },
    ]


def pdb(name: str, selector: dict[str, Any], min_available: int | str) -> dict[str, Any]:
    return {
        "apiVersion": "policy/v1",
        "kind": "PodDisruptionBudget",
        "metadata": {"name": name, "namespace": "research", "generation": 1},
        "spec": {"minAvailable": min_available, "selector": selector},
    }


def _labels(job: str, gpu: int) -> dict[str, str]:
    return {
        "namespace": "research",
        "pod": f"{job}-master-0",
        "container": "pytorch",
        "gpu": str(gpu),
        "Hostname": "gpu-node-1",
        "UUID": f"GPU-{job}-{gpu}",
    }


def history(
    now: float, *, unreadable_idle_for: float = 0.0, step: float = 60.0, clock_ahead: float = 0.0
) -> str:
    """Per-pod utilization for 24 h up to 15 s before `now`. With `unreadable_idle_for`, the
    idle job's GPUs stop yielding utilization that long before `now` (the exporter leaves the
    sample out when NVML fails) while their allocation is still reported. With `clock_ahead`,
    Prometheus' clock runs that far ahead of the controller's: samples are dated up to
    `now + clock_ahead`, and the idle job has been busy in those minutes."""
    rng = np.random.default_rng(11)
    times = np.arange(now + clock_ahead - HISTORY_S, now + clock_ahead - 15.0, step)
    series = []
    for job, level, first_gpu in (("notebook", 0.0, 0), ("train", 0.8, 2)):
        for gpu in (first_gpu, first_gpu + 1):
            lab = _labels(job, gpu)
            vals = np.clip(level + 0.1 * rng.standard_normal(len(times)) * (level > 0), 0, 1)
            if clock_ahead and job == "notebook":
                vals = np.where(times >= now, 0.9, vals)
            cut = now - unreadable_idle_for if job == "notebook" and unreadable_idle_for else now
            util = [(float(t), float(v)) for t, v in zip(times, vals, strict=True) if t < cut]
            series.append((gc.POD_UTILIZATION, lab, util))
            series.append((gc.POD_ALLOCATED, lab, [(float(t), 1.0) for t in times]))
    return openmetrics(series)


def dcgm_history(now: float, *, unreadable_idle_for: float, step: float = 60.0) -> str:
    """dcgm-exporter's pod-labelled GPU_UTIL (percent): the idle job's series vanish
    `unreadable_idle_for` before `now`, as dcgm-exporter drops a GPU it cannot read."""
    times = np.arange(now - HISTORY_S, now - 15.0, step)
    series = []
    for job, level, first_gpu in (("notebook", 0.0, 0), ("train", 80.0, 2)):
        for gpu in (first_gpu, first_gpu + 1):
            lab = {
                **_labels(job, gpu),
                "device": f"nvidia{gpu}",
                "modelName": "NVIDIA H100",
                "pci_bus_id": f"0000:0{gpu}:00.0",
                "DCGM_FI_DRIVER_VERSION": "550.54.15",
            }
            cut = now - unreadable_idle_for if job == "notebook" else now
            points = [(float(t), level) for t in times if t < cut]
            series.append((gc.DCGM_GPU_UTIL, lab, points))
    return openmetrics(series)
