"""No harm from sharing, end to end: a time-sliced node whose two guaranteed pods were each busy
beside the other half their busy time over the day is lowered to 1 replica, reason
`GuaranteedPodsContend`, the evidence giving the share the controller measured.

Each cycle is its own `gpu-reclaimer run --once --apply` process, speaking through the real
`kubernetes` client to the stateful fake API server, with a real Prometheus holding the day of
per-pod utilization the controller measures contention from (`contention_world`). A reshape
takes two cycles, as the device plugin needs (the new config key, then the node's label once
the kubelet has projected the key): between them the test moves the key's write time back past
`configProjectionDelay`, as the clock would.
"""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from budget_world import lowered_to_whole, reshapes, ts
from contention_world import NODE, cluster_objects, history
from fakeapi import FakeCluster
from promserver import PromServer
from runonce import applied_once

NODES = ("", "v1", "nodes")
KEY_AT = "gpu-reclaim.io/reshape-key-written-at"
pytestmark = [pytest.mark.prometheus, pytest.mark.slow]
world_history = history
world_objects = cluster_objects


def test_guaranteed_pods_busy_together_lower_their_node_to_one_replica(
    prom: PromServer, kubeconfig: Path, cluster: FakeCluster
) -> None:
    first = applied_once(prom.url, kubeconfig, timeout=180)
    assert reshapes(first) == {NODE: (2, 1, "GuaranteedPodsContend", "applied")}, first["plan"]
    action = next(a for a in first["plan"]["actions"] if a["target"] == NODE)
    measured = "guaranteed pods here were busy beside a busy neighbour 50% of their"
    assert measured in action["evidence"]["detail"], action["evidence"]
    assert "(maxCobusyShare 5%)" in action["evidence"]["detail"]
    # the key is written, the label not yet: the kubelet has not projected the key
    labels = cluster.get(*NODES, NODE)["metadata"]["labels"]
    assert labels["nvidia.com/device-plugin.config"] == "ts-2"
    cluster.get(*NODES, NODE)["metadata"]["annotations"][KEY_AT] = ts(time.time() - 120)
    second = applied_once(prom.url, kubeconfig, timeout=180)
    assert reshapes(second) == {NODE: (2, 1, "GuaranteedPodsContend", "applied")}, second["plan"]
    events = lowered_to_whole(cluster, NODE, "GuaranteedPodsContend")
    assert all(measured in e["message"] for e in events), events
