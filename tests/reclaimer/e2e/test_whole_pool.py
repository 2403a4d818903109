"""A pool installed whole, end to end: a node at 1 replica labelled into the managed pool is
raised once the week's memory peaks say its pods fit and its load stays low, in two cycles
(key, then label), with its reason and Events.

Each cycle is its own `gpu-reclaimer run --once --apply` process, speaking through the real
`kubernetes` client to the stateful fake API server, with a real Prometheus holding 15 days of
the node's load and the week's peaks (`whole_pool_world`). Between the cycles the test moves the
key's write time back past `configProjectionDelay`, as the clock would.
"""

from __future__ import annotations

import time
from pathlib import Path

import pytest
import yaml
from budget_world import node_events, reshapes, ts
from fakeapi import FakeCluster
from promserver import PromServer
from runonce import applied_once
from whole_pool_world import NODE, cluster_objects, history

NODES = ("", "v1", "nodes")
KEY_AT = "gpu-reclaim.io/reshape-key-written-at"
pytestmark = [pytest.mark.prometheus, pytest.mark.slow]
world_history = history
world_objects = cluster_objects


def test_a_whole_pool_node_is_raised_once_its_pods_are_known_to_fit(
    prom: PromServer, kubeconfig: Path, cluster: FakeCluster
) -> None:
    first = applied_once(prom.url, kubeconfig, timeout=180)
    assert reshapes(first) == {NODE: (1, 4, "NodeUnderused", "applied")}, first["plan"]
    cluster.get(*NODES, NODE)["metadata"]["annotations"][KEY_AT] = ts(time.time() - 120)
    second = applied_once(prom.url, kubeconfig, timeout=180)
    assert reshapes(second) == {NODE: (1, 4, "NodeUnderused", "applied")}, second["plan"]
    detail = next(a for a in first["plan"]["actions"] if a["target"] == NODE)["evidence"]
    assert "1 -> 4 replicas" in detail["detail"] and "raise gates allow 4" in detail["detail"]
    node = cluster.get(*NODES, NODE)
    key = node["metadata"]["labels"]["nvidia.com/device-plugin.config"]
    data = cluster.get("", "v1", "configmaps", "time-slicing-config", "gpu-operator")["data"]
    shared = yaml.safe_load(data[key])["sharing"]["timeSlicing"]["resources"]
    assert [(r["name"], r["replicas"]) for r in shared] == [("nvidia.com/gpu", 4)]
    notes = node["metadata"]["annotations"]
    assert (notes["gpu-reclaim.io/reshape-to"], notes["gpu-reclaim.io/reshape-reason"]) == (
        "4",
        "NodeUnderused",
    )
    events = node_events(cluster, NODE)
    assert [(e["reason"], e["type"]) for e in events] == [("GpuReclaimReshaped", "Normal")] * 2
    assert all("replicas 1 -> 4" in e["message"] for e in events), events
