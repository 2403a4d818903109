"""A time-sliced cluster for the sharing end-to-end tests, with matching Prometheus history.

Every node has one physical GPU at 2 time-slice replicas (GPU feature discovery's labels).
- gpu-ts-1 (90% busy): `prod/train` (guaranteed queue `prod`, busy 50%) and `research/tune`
  (reclaimable queue `research`, busy 45%) each hold one replica of the same GPU, `GPU-ts-1`.
- The week's pods' memory peaks: 100 pods that ended 3 days ago peaked at 2 GiB, the two above
  hold 3 GiB, `research/big-0` peaked at 10 GiB: the 99% peak, each new pod's budget, is 3 GiB.
- gpu-ts-ok: idle (10%) for 15 days, 10% of its memory used: four pods of 3 GiB fit.
- gpu-ts-mem: idle for 15 days; its pod `research/big-0` holds 2 GiB now (2.8 GiB used), but
  peaked at 10 GiB two days ago: with one more pod of 3 GiB, 10% of the 16 GiB would not stay
  free (budgeting by what it holds now, or the fill ratio alone, would raise).
- gpu-ts-new: idle, with one day of load history only.
- gpu-ts-peak: idle now, but every day from 3 to 6 hours after now's time of day it runs at 60%.
- The day's fleet: besides the pods above, 150 `batch` pods idle for most of the day elsewhere
  (`contention_world.idle_pods`): the fleet is busy about 1.4% of its time, so a raise to 4
  passes the contention rule (a new pod would meet a busy neighbour about 4% of its busy time);
  `prod/train` itself is busy beside `research/tune` all its busy time.
Per-pod series for a day (60 s), device utilization for 15 days (5 min), device memory and
`research/big-0`'s readings for 20 minutes (and the peaks above).
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import numpy as np
from contention_world import idle_pods
from promserver import openmetrics

import gpu_contract as gc

GUARANTEED, RECLAIMABLE = "prod/train", "research/tune"
CONTENDED = "gpu-ts-1"
RAISE_NODES = ("gpu-ts-ok", "gpu-ts-mem", "gpu-ts-new", "gpu-ts-peak")
DAY = 86400.0
MIB = 1024.0**2
BUSY = {GUARANTEED: 0.5, RECLAIMABLE: 0.45}


def ts(t: float) -> str:
    return datetime.fromtimestamp(t, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _queue(name: str, reclaimable: bool) -> dict[str, Any]:
    return {
        "apiVersion": "scheduling.volcano.sh/v1beta1",
        "kind": "Queue",
        "metadata": {"name": name},
        "spec": {"weight": 1, "deserved": {"nvidia.com/gpu": "2"}, "reclaimable": reclaimable},
        "status": {"state": "Open"},
    }


def _node(name: str) -> dict[str, Any]:
    labels = {"nvidia.com/gpu.count": "1", "nvidia.com/gpu.replicas": "2"}
    gpus = {"nvidia.com/gpu": "2"}
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": labels},
        "status": {"capacity": gpus, "allocatable": gpus},
    }


def _pytorchjob(key: str, uid: str, created: float) -> list[dict[str, Any]]:
    ns, name = key.split("/")
    owner = {"apiVersion": "kubeflow.org/v1", "kind": "PyTorchJob", "name": name}
    owner |= {"controller": True, "uid": uid}
    container = {
        "name": "pytorch",
        "image": "t:1",
        "resources": {"limits": {"nvidia.com/gpu": "1"}},
    }
    meta = {"namespace": ns, "creationTimestamp": ts(created)}
    return [
        {
            "apiVersion": "kubeflow.org/v1",
            "kind": "PyTorchJob",
            "metadata": {"name": name, "uid": uid, **meta},
            "spec": {
                "runPolicy": {"schedulingPolicy": {"queue": ns, "minAvailable": 1}},
                "pytorchReplicaSpecs": {
                    "Master": {"replicas": 1, "template": {"spec": {"containers": [container]}}}
                },
            },
            "status": {
                "startTime": ts(created + 5),
                "conditions": [{"type": "Running", "status": "True"}],
            },
        },
        {
            "apiVersion": "scheduling.volcano.sh/v1beta1",
            "kind": "PodGroup",
            "metadata": {"name": name, "ownerReferences": [owner], **meta},
            "spec": {"minMember": 1, "queue": ns},
            "status": {"phase": "Running"},
        },
        {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {
                "name": f"{name}-master-0",
                "uid": f"{uid}-0",
                "labels": {"training.kubeflow.org/job-name": name},
                "annotations": {"scheduling.k8s.io/group-name": name},
                "ownerReferences": [owner],
                **meta,
            },
            "spec": {"nodeName": CONTENDED, "containers": [container]},
            "status": {"phase": "Running", "startTime": ts(created + 30)},
        },
    ]


def cluster_objects(now: float) -> list[dict[str, Any]]:
    created = now - DAY - 3600
    return [
        _queue("research", True),
        _queue("prod", False),
        *(_node(n) for n in (CONTENDED, *RAISE_NODES)),
        *_pytorchjob(GUARANTEED, "33333333-0000-0000-0000-00000000000c", created),
        *_pytorchjob(RECLAIMABLE, "44444444-0000-0000-0000-00000000000d", created),
    ]


def _device(node: str) -> dict[str, str]:
    return {"gpu": "0", "UUID": f"GPU-{node}", "Hostname": node, "modelName": "Tesla T4"}


def _load(node: str, t: float, now: float) -> float:
    """Device utilization (percent) of `node` at `t`."""
    if node == CONTENDED:
        return 90.0
    ahead = ((t - now) % DAY) / 3600  # hours after now's time of day
    return 60.0 if node == "gpu-ts-peak" and 3 <= ahead < 6 else 10.0


def history(now: float) -> str:
    long = np.arange(now - 15 * DAY, now - 15.0, 300.0)
    day = np.arange(now - DAY, now - 15.0, 60.0)
    recent = [float(t) for t in np.arange(now - 1200, now - 15.0, 30.0)]
    used_mib = {"gpu-ts-mem": 2.8 * 1024, "gpu-ts-1": 8 * 1024}
    series = []
    for node in (CONTENDED, *RAISE_NODES):
        dev = _device(node)
        times = day if node == "gpu-ts-new" else long
        series.append((gc.DCGM_GPU_UTIL, dev, [(float(t), _load(node, t, now)) for t in times]))
        used = used_mib.get(node, 0.1 * 16 * 1024)
        series.append((gc.DCGM_FB_USED, dev, [(t, used) for t in recent]))
        series.append((gc.DCGM_FB_FREE, dev, [(t, 16 * 1024 - used) for t in recent]))
    for key, busy in BUSY.items():
        ns, name = key.split("/")
        lab = {"namespace": ns, "pod": f"{name}-master-0", "container": "pytorch"}
        lab |= _device(CONTENDED)
        lab.pop("modelName")
        series.append((gc.POD_UTILIZATION, lab, [(float(t), busy) for t in day]))
        series.append((gc.POD_ALLOCATED, lab, [(float(t), 1.0) for t in day]))
        series.append((gc.POD_MEMORY, lab, [(float(t), 3 * 1024 * MIB) for t in day]))
    big = {"namespace": "research", "pod": "big-0", "container": "c", **_device("gpu-ts-mem")}
    big.pop("modelName")
    peak = [(float(t), 10 * 1024 * MIB) for t in np.arange(now - 2 * DAY, now - 2 * DAY + 600, 60)]
    series.append((gc.POD_MEMORY, big, [*peak, *((t, 2 * 1024 * MIB) for t in recent)]))
    series.append((gc.POD_ALLOCATED, big, [(t, 1.0) for t in recent]))
    series.append((gc.POD_UTILIZATION, big, [(t, 0.1) for t in recent]))
    return openmetrics([*series, *_ended_pods(now), *idle_pods(now, 150, 23.5)])


def _ended_pods(now: float) -> list[tuple[str, dict[str, str], list[tuple[float, float]]]]:
    """100 pods that ran ten minutes three days ago, each peaking at 2 GiB."""
    times = [float(t) for t in np.arange(now - 3 * DAY, now - 3 * DAY + 600, 60)]
    device = {k: v for k, v in _device(CONTENDED).items() if k != "modelName"}
    return [
        (
            gc.POD_MEMORY,
            {"namespace": "batch", "pod": f"done-{k}", "container": "c", **device},
            [(t, 2 * 1024 * MIB) for t in times],
        )
        for k in range(100)
    ]
