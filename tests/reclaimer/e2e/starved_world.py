"""The cluster around a workload of the kind under test: a reclaimable `research` queue, a
guaranteed `prod` queue, one GPU node, and a PodGroup of prod waiting for 2 GPUs (the starved
tenant the reclaimer makes room for). Pure objects, for `FakeCluster.add`."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

VOLCANO = "scheduling.volcano.sh/v1beta1"


def ts(t: float) -> str:
    return datetime.fromtimestamp(t, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def starved_world(now: float, node_gpus: int) -> list[dict[str, Any]]:
    queues = [
        {
            "apiVersion": VOLCANO,
            "kind": "Queue",
            "metadata": {"name": name},
            "spec": {"deserved": {"nvidia.com/gpu": "2"}, "reclaimable": reclaimable},
            "status": {"state": "Open"},
        }
        for name, reclaimable in (("research", True), ("prod", False))
    ]
    gpus = str(node_gpus)
    node = {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": "gpu-node-1", "labels": {"nvidia.com/gpu.count": gpus}},
        "status": {"capacity": {"nvidia.com/gpu": gpus}},
    }
    pending = {
        "apiVersion": VOLCANO,
        "kind": "PodGroup",
        "metadata": {"name": "llm", "namespace": "prod", "creationTimestamp": ts(now - 1800)},
        "spec": {"minMember": 1, "queue": "prod", "minResources": {"nvidia.com/gpu": "2"}},
        "status": {"phase": "Inqueue"},
    }
    return [*queues, node, pending]
