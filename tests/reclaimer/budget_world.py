"""A time-sliced cluster whose pods' week peaks pass half a 16 GiB GPU, and matching Prometheus
readings, for the end-to-end test of `plan.budget` (the memory budget's cap on replicas).

The device plugin's ConfigMap (`gpu-operator/time-slicing-config`, the reclaimer's default) has
one key, `ts-2`: 2 replicas of `nvidia.com/gpu`. Pods are bare pods (each its own gang).
- gpu-ts-16 (one 16 GiB T4, `ts-2`): `prod/infer-0` holds one replica, 3 GiB now.
- gpu-ts-32 (one 32 GiB V100, `ts-2`): `prod/serve-0` holds one replica, 3 GiB now.
- The week's peaks (`gpu_pod_memory_used_bytes`, read as `max_over_time` over 7 days): the two
  pods above at 3 GiB, and 12 pods of the `batch` namespace that ran ten minutes three days ago
  at 10 GiB. The 99% peak of the 14, each pod slot's budget, is 10 GiB: one pod fits the T4,
  two (20 GiB) do not; the V100 holds three.
Device readings (busy 50%, in the load band: no load rule moves either node; 6 GiB used) and the
running pods' readings cover the last 20 minutes.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import numpy as np
import yaml
from fakeapi import FakeCluster
from promserver import openmetrics

import gpu_contract as gc

VOLCANO = "scheduling.volcano.sh/v1beta1"
SMALL, LARGE = "gpu-ts-16", "gpu-ts-32"
DEVICE_GIB = {SMALL: 16, LARGE: 32}
MODEL = {SMALL: "Tesla T4", LARGE: "Tesla V100-SXM2-32GB"}
PODS = {"prod/infer-0": SMALL, "prod/serve-0": LARGE}  # pod key -> node
ENDED, ENDED_GIB = 12, 10.0  # the batch pods of three days ago, and their peak
DAY = 86400.0
MIB = 1024.0**2
TS2 = """version: v1
sharing:
  timeSlicing:
    resources:
    - name: nvidia.com/gpu
      replicas: 2
"""


def ts(t: float) -> str:
    return datetime.fromtimestamp(t, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def gpu_node(name: str, replicas: int = 2, labels: dict[str, str] | None = None) -> dict[str, Any]:
    """A node of one GPU the device plugin offers as `replicas` (config `ts-2` at 2), with
    `labels` besides."""
    own = {"nvidia.com/gpu.count": "1", "nvidia.com/gpu.replicas": str(replicas)}
    if replicas == 2:
        own["nvidia.com/device-plugin.config"] = "ts-2"
    own |= labels or {}
    offered = {"nvidia.com/gpu": str(replicas)}
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": own},
        "status": {"capacity": offered, "allocatable": offered},
    }


def volcano_queue(name: str, deserved: int, *, reclaimable: bool) -> dict[str, Any]:
    return {
        "apiVersion": VOLCANO,
        "kind": "Queue",
        "metadata": {"name": name},
        "spec": {"deserved": {"nvidia.com/gpu": str(deserved)}, "reclaimable": reclaimable},
        "status": {"state": "Open"},
    }


def ts_config(data: dict[str, str]) -> dict[str, Any]:
    """The device plugin's time-slicing ConfigMap holding `data` (config name -> YAML)."""
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": "time-slicing-config", "namespace": "gpu-operator"},
        "data": data,
    }


def gpu_pod(key: str, node: str, now: float, gpus: int = 1) -> dict[str, Any]:
    """A running bare pod of `key`'s namespace (its Volcano queue) on `node`, holding `gpus`
    `nvidia.com/gpu`, created 2 h and started 1 h before `now`."""
    ns, name = key.split("/")
    container = {"name": "main", "image": "m:1", "resources": {"limits": {"nvidia.com/gpu": gpus}}}
    status = {
        "name": "main",
        "ready": True,
        "restartCount": 0,
        "state": {"running": {"startedAt": ts(now - 3600)}},
    }
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": name,
            "namespace": ns,
            "uid": f"uid-{name}",
            "creationTimestamp": ts(now - 7200),
            "annotations": {"scheduling.volcano.sh/queue-name": ns},
        },
        "spec": {"nodeName": node, "containers": [container]},
        "status": {"phase": "Running", "startTime": ts(now - 7200), "containerStatuses": [status]},
    }


def cluster_objects(now: float) -> list[dict[str, Any]]:
    queues = [
        volcano_queue("batch", 2, reclaimable=True),
        volcano_queue("prod", 2, reclaimable=False),
    ]
    pods = [gpu_pod(key, node, now) for key, node in PODS.items()]
    return [*queues, ts_config({"ts-2": TS2}), gpu_node(SMALL), gpu_node(LARGE), *pods]


def _device(node: str) -> dict[str, str]:
    return {"gpu": "0", "UUID": f"GPU-{node}", "Hostname": node}


def history(now: float) -> str:
    recent = [float(t) for t in np.arange(now - 1200, now - 15.0, 30.0)]
    series = []
    for node, gib in DEVICE_GIB.items():
        dev = _device(node) | {"modelName": MODEL[node]}
        series.append((gc.DCGM_GPU_UTIL, dev, [(t, 50.0) for t in recent]))
        series.append((gc.DCGM_FB_USED, dev, [(t, 6 * 1024.0) for t in recent]))
        series.append((gc.DCGM_FB_FREE, dev, [(t, (gib - 6) * 1024.0) for t in recent]))
    for key, node in PODS.items():
        ns, name = key.split("/")
        lab = {"namespace": ns, "pod": name, "container": "main", **_device(node)}
        series.append((gc.POD_ALLOCATED, lab, [(t, 1.0) for t in recent]))
        series.append((gc.POD_UTILIZATION, lab, [(t, 0.2) for t in recent]))
        series.append((gc.POD_MEMORY, lab, [(t, 3 * 1024 * MIB) for t in recent]))
    ran = [float(t) for t in np.arange(now - 3 * DAY, now - 3 * DAY + 600, 60)]
    for k in range(ENDED):
        lab = {"namespace": "batch", "pod": f"done-{k}", "container": "main", **_device(LARGE)}
        series.append((gc.POD_MEMORY, lab, [(t, ENDED_GIB * 1024 * MIB) for t in ran]))
    return openmetrics(series)


def reshapes(report: dict[str, Any]) -> dict[str, tuple[int, int, str, str]]:
    """Node -> (from, to, reason, outcome) of each reshape the cycle planned and applied."""
    outcomes = {o["action"]["target"]: o["outcome"] for o in report["outcomes"]}
    return {
        a["target"]: (a["from_replicas"], a["to_replicas"], a["reason"], outcomes[a["target"]])
        for a in report["plan"]["actions"]
        if a["kind"] == "reshape"
    }


def node_events(cluster: FakeCluster, node: str) -> list[dict[str, Any]]:
    return [e for e in cluster.all("", "v1", "events") if e["involvedObject"]["name"] == node]


def lowered_to_whole(cluster: FakeCluster, node: str, reason: str) -> list[dict[str, Any]]:
    """Check that `node` was relabelled to a config of 1 replica (no time-slicing) for
    `reason`, with the reshape Event at each of its two cycles; returns those Events."""
    obj = cluster.get("", "v1", "nodes", node)
    key = obj["metadata"]["labels"]["nvidia.com/device-plugin.config"]
    data = cluster.get("", "v1", "configmaps", "time-slicing-config", "gpu-operator")["data"]
    assert key.startswith("gpu-reclaim-r1-"), key
    assert "timeSlicing" not in (yaml.safe_load(data[key]).get("sharing") or {})
    notes = obj["metadata"]["annotations"]
    assert (notes["gpu-reclaim.io/reshape-to"], notes["gpu-reclaim.io/reshape-reason"]) == (
        "1",
        reason,
    )
    events = node_events(cluster, node)
    assert [(e["reason"], e["type"]) for e in events] == [("GpuReclaimReshaped", "Normal")] * 2
    assert all(f"{reason}; replicas 2 -> 1" in e["message"] for e in events), events
    return events
