"""An end-to-end world: a small Volcano cluster and 24 h of matching utilization history.

gpu-node-1 has 4 GPUs, all held: `research/sim-sweep` (Volcano Job, 2 pods x 1 GPU, reclaimable
queue `research`) has been idle for a day; `research/train` (2 x 1 GPU) is busy. `prod/llm`
(PodGroup, queue `prod`, 2 GPUs) waits in a queue that is owed GPUs. Timestamps are relative to
`now`, so the cluster is as old as the history says.
"""

from __future__ import annotations

import time
from datetime import UTC, datetime
from typing import Any

import numpy as np
from promserver import openmetrics

import gpu_contract as gc

IDLE_JOB, BUSY_JOB, PENDING_JOB = "research/sim-sweep", "research/train", "prod/llm"
HISTORY_S = 24 * 3600


def _ts(t: float) -> str:
    return datetime.fromtimestamp(t, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _vcjob(name: str, uid: str, created: float) -> list[dict[str, Any]]:
    owner = {
        "apiVersion": "batch.volcano.sh/v1alpha1",
        "kind": "Job",
        "name": name,
        "controller": True,
        "uid": uid,
    }
    pg = f"{name}-{uid}"
    gpu = {"limits": {"nvidia.com/gpu": "1"}}
    objs: list[dict[str, Any]] = [
        {
            "apiVersion": "batch.volcano.sh/v1alpha1",
            "kind": "Job",
            "metadata": {
                "name": name,
                "namespace": "research",
                "uid": uid,
                "creationTimestamp": _ts(created),
            },
            "spec": {
                "minAvailable": 2,
                "queue": "research",
                "tasks": [
                    {
                        "name": "w",
                        "replicas": 2,
                        "template": {
                            "spec": {
                                "containers": [{"name": "w", "image": "w:1", "resources": gpu}]
                            }
                        },
                    }
                ],
            },
            "status": {"state": {"phase": "Running"}},
        },
        {
            "apiVersion": "scheduling.volcano.sh/v1beta1",
            "kind": "PodGroup",
            "metadata": {
                "name": pg,
                "namespace": "research",
                "ownerReferences": [owner],
                "creationTimestamp": _ts(created),
            },
            "spec": {"minMember": 2, "queue": "research"},
            "status": {"phase": "Running"},
        },
    ]
    for i in range(2):
        objs.append(
            {
                "apiVersion": "v1",
                "kind": "Pod",
                "metadata": {
                    "name": f"{name}-w-{i}",
                    "namespace": "research",
                    "uid": f"{uid}-{i}",
                    "creationTimestamp": _ts(created),
                    "labels": {"volcano.sh/job-name": name, "volcano.sh/queue-name": "research"},
                    "annotations": {"scheduling.k8s.io/group-name": pg},
                    "ownerReferences": [owner],
                },
                "spec": {
                    "nodeName": "gpu-node-1",
                    "containers": [{"name": "w", "image": "w:1", "resources": gpu}],
                },
                "status": {"phase": "Running", "startTime": _ts(created + 30)},
            }
        )
    return objs


def cluster_objects(now: float) -> list[dict[str, Any]]:
    created = now - HISTORY_S - 3600
    return [
        {
            "apiVersion": "scheduling.volcano.sh/v1beta1",
            "kind": "Queue",
            "metadata": {"name": "research"},
            "spec": {"weight": 1, "deserved": {"nvidia.com/gpu": "2"}},
            "status": {"state": "Open"},
        },
        {
            "apiVersion": "scheduling.volcano.sh/v1beta1",
            "kind": "Queue",
            "metadata": {"name": "prod"},
            "spec": {"weight": 1, "deserved": {"nvidia.com/gpu": "2"}, "reclaimable": False},
            "status": {"state": "Open"},
        },
        {
            "apiVersion": "v1",
            "kind": "Node",
            "metadata": {"name": "gpu-node-1", "labels": {"nvidia.com/gpu.count": "4"}},
            "status": {"capacity": {"nvidia.com/gpu": "4"}, "allocatable": {"nvidia.com/gpu": "4"}},
        },
        *_vcjob("sim-sweep", "11111111-0000-0000-0000-000000000001", created),
        *_vcjob("train", "22222222-0000-0000-0000-000000000001", created),
        {
            "apiVersion": "scheduling.volcano.sh/v1beta1",
            "kind": "PodGroup",
            "metadata": {"name": "llm", "namespace": "prod", "creationTimestamp": _ts(now - 1800)},
            "spec": {"minMember": 1, "queue": "prod", "minResources": {"nvidia.com/gpu": "2"}},
            "status": {"phase": "Inqueue"},
        },
    ]


def history(now: float, step: float = 60.0) -> str:
    """Samples every `step` s over the last 24 h, up to 15 s before `now`."""
    rng = np.random.default_rng(7)
    times = np.arange(now - HISTORY_S, now - 15.0, step)
    series = []
    for job, level in (("sim-sweep", 0.0), ("train", 0.8)):
        for i in range(2):
            lab = {
                "namespace": "research",
                "pod": f"{job}-w-{i}",
                "container": "w",
                "gpu": str(i if job == "train" else i + 2),
                "Hostname": "gpu-node-1",
                "UUID": f"GPU-{job}-{i}",
            }
            noise = 0.1 * rng.standard_normal(len(times)) * (level > 0)
            vals = np.clip(level + noise, 0.0, 1.0)
            pts = [(float(t), float(v)) for t, v in zip(times, vals, strict=True)]
            series.append((gc.POD_UTILIZATION, lab, pts))
            series.append((gc.POD_ALLOCATED, lab, [(t, 1.0) for t, _ in pts]))
    return openmetrics(series)


def wall_now() -> float:
    return time.time()
