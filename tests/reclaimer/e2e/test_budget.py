"""The memory budget's cap, end to end: a time-sliced node whose GPU cannot hold two pods at the
week's 99% peak is lowered to 1 replica, with its reason and an Event; a node whose GPU holds
them keeps its replicas.

Each cycle is its own `gpu-reclaimer run --once --apply` process, speaking through the real
`kubernetes` client to the stateful fake API server, with a real Prometheus holding the
readings and the week's peaks (`budget_world`). A reshape takes two cycles (the new config key,
then the node's label once the kubelet has projected the key): between them the test moves the
key's write time back past `configProjectionDelay`, as the clock would.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest
from budget_world import (
    LARGE,
    SMALL,
    cluster_objects,
    history,
    lowered_to_whole,
    node_events,
    reshapes,
    ts,
)
from fakeapi import FakeCluster
from promserver import PromServer
from runonce import applied_once

NODES = ("", "v1", "nodes")
KEY_AT = "gpu-reclaim.io/reshape-key-written-at"
pytestmark = [pytest.mark.prometheus, pytest.mark.slow]
world_history = history
world_objects = cluster_objects


def _lowered_small_kept_large(report: dict[str, Any]) -> None:
    assert reshapes(report) == {SMALL: (2, 1, "MemoryBudgetExceeded", "applied")}
    kept = {s["target"]: s for s in report["plan"]["skipped"]}[LARGE]
    assert kept["reason"] == "NoChangeNeeded", kept


def test_a_node_whose_gpu_cannot_hold_two_pods_at_the_budget_goes_to_one_replica(
    prom: PromServer, kubeconfig: Path, cluster: FakeCluster
) -> None:
    first = applied_once(prom.url, kubeconfig, timeout=180)
    _lowered_small_kept_large(first)  # the new key written
    cluster.get(*NODES, SMALL)["metadata"]["annotations"][KEY_AT] = ts(time.time() - 120)
    second = applied_once(prom.url, kubeconfig, timeout=180)
    _lowered_small_kept_large(second)  # the node relabelled
    action = next(a for a in first["plan"]["actions"] if a["target"] == SMALL)
    detail = action["evidence"]["detail"]  # the budget and the peaks, read from Prometheus
    assert "2 -> 1 replicas: each pod may come to hold 10.0 GiB" in detail
    assert "the 99% memory peak of 14 pods over 7d" in detail
    assert f"GPU GPU-{SMALL} has 16.0 GiB" in detail and "room for 1 pod(s)" in detail
    lowered_to_whole(cluster, SMALL, "MemoryBudgetExceeded")
    large = cluster.get(*NODES, LARGE)["metadata"]["labels"]["nvidia.com/device-plugin.config"]
    assert (large, node_events(cluster, LARGE)) == ("ts-2", [])
