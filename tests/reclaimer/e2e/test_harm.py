"""No harm from sharing, end to end: a node whose time-sliced pods crashed is lowered to 1
replica, and a pool node is handed back whole to a waiting multi-GPU job.

Each cycle is its own `gpu-reclaimer run --once --apply` process, speaking through the real
`kubernetes` client to the stateful fake API server, with a real Prometheus holding the
readings (`harm_world`). A reshape takes two cycles, as the device plugin needs (the new
config key, then the node's label once the kubelet has projected the key): between them the
test moves the key's write time back past `configProjectionDelay`, as the clock would.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest
import yaml
from budget_world import node_events, reshapes
from fakeapi import FakeCluster
from harm_world import CRASH_NODE, CRASHED, PENDING, POOL_NODE, cluster_objects, history, ts
from promserver import PromServer
from runonce import applied_once

NODES = ("", "v1", "nodes")
KEY_AT = "gpu-reclaim.io/reshape-key-written-at"
pytestmark = [pytest.mark.prometheus, pytest.mark.slow]
world_history = history
world_objects = cluster_objects


def _two_cycles(
    prom: PromServer, kubeconfig: Path, cluster: FakeCluster, node: str
) -> tuple[dict[str, Any], dict[str, Any]]:
    """The cycle that writes `node`'s new key, and the one that relabels it."""
    first = applied_once(prom.url, kubeconfig, timeout=180)
    notes = cluster.get(*NODES, node)["metadata"]["annotations"]
    notes[KEY_AT] = ts(time.time() - 120)  # the kubelet has had time to project it
    second = applied_once(prom.url, kubeconfig, timeout=180)
    return first, second


def _whole(cluster: FakeCluster, node: str) -> dict[str, str]:
    """The node's reclaimer notes, once its label names a config without time-slicing."""
    obj = cluster.get(*NODES, node)
    key = obj["metadata"]["labels"]["nvidia.com/device-plugin.config"]
    data = cluster.get("", "v1", "configmaps", "time-slicing-config", "gpu-operator")["data"]
    assert key.startswith("gpu-reclaim-r1-"), key
    assert "timeSlicing" not in (yaml.safe_load(data[key]).get("sharing") or {})
    return dict(obj["metadata"]["annotations"])


def test_crashed_pods_lower_their_node_to_one_replica(
    prom: PromServer, kubeconfig: Path, cluster: FakeCluster
) -> None:
    first, second = _two_cycles(prom, kubeconfig, cluster, CRASH_NODE)
    for report in (first, second):
        assert reshapes(report)[CRASH_NODE] == (2, 1, "SharedPodsCrashed", "applied")
    action = next(a for a in first["plan"]["actions"] if a["target"] == CRASH_NODE)
    detail = action["evidence"]["detail"]
    assert "2 -> 1 replicas: 1 container crash(es) of pods sharing its GPUs" in detail
    assert f"{CRASHED} (main) OOMKilled exit 137" in detail and "3 restart(s)" in detail
    notes = _whole(cluster, CRASH_NODE)
    assert (notes["gpu-reclaim.io/reshape-to"], notes["gpu-reclaim.io/reshape-reason"]) == (
        "1",
        "SharedPodsCrashed",
    )
    events = node_events(cluster, CRASH_NODE)
    assert [e["reason"] for e in events] == ["GpuReclaimReshaped"] * 2
    assert all("SharedPodsCrashed" in e["message"] and CRASHED in e["message"] for e in events), (
        events
    )


def test_a_waiting_multi_gpu_job_gets_a_pool_node_back_whole(
    prom: PromServer, kubeconfig: Path, cluster: FakeCluster
) -> None:
    first, second = _two_cycles(prom, kubeconfig, cluster, POOL_NODE)
    for report in (first, second):
        assert reshapes(report)[POOL_NODE] == (2, 1, "WholeGpusForPendingJob", "applied")
    notes = _whole(cluster, POOL_NODE)
    assert notes["gpu-reclaim.io/reshape-reason"] == "WholeGpusForPendingJob"
    (event, _) = node_events(cluster, POOL_NODE)
    assert event["reason"] == "GpuReclaimReshaped" and event["type"] == "Normal"
    assert f"for pending {PENDING}; queue prod" in event["message"]
    assert "3 of 4 GPUs here hold no pod" in event["message"]
