"""Reshape through the actuator: new ConfigMap key first, then the node label, no dangling key."""

from __future__ import annotations

import yaml
from fakeapi import FakeCluster

from kube.plan_fixture import CM, NODE, NOW, events_for, reshape, run
from reclaimer.actuator import Outcome
from reclaimer.kube import resources as r
from reclaimer.model import Reason
from reclaimer.policy import Policy, TimeSlicing


def _replicas(cluster: FakeCluster, node: str) -> int:
    key = cluster.get(*NODE, node)["metadata"]["labels"][r.DEVICE_PLUGIN_CONFIG_LABEL]
    data = cluster.get(*CM, "time-slicing-config", "gpu-operator")["data"]
    assert key in data, f"node {node} points at missing key {key}"
    slicing = (yaml.safe_load(data[key]).get("sharing") or {}).get("timeSlicing") or {}
    return next((x["replicas"] for x in slicing.get("resources", [])), 1)


def test_reshape_writes_key_then_relabels(api, cluster: FakeCluster) -> None:
    [res] = run(api, [reshape("gpu-node-1", 1, 2)])
    assert res.outcome is Outcome.APPLIED, res
    assert _replicas(cluster, "gpu-node-1") == 2
    writes = [
        (q.method, q.path.rsplit("/", 2)[-2]) for q in cluster.writes() if q.method == "PATCH"
    ]
    assert writes == [("PATCH", "configmaps"), ("PATCH", "nodes")]
    node = cluster.get(*NODE, "gpu-node-1")
    assert node["metadata"]["annotations"][r.RESHAPE_TO] == "2"
    assert events_for(cluster, "gpu-node-1")[0]["reason"] == "GpuReclaimReshaped"
    assert "plain" in cluster.get(*CM, "time-slicing-config", "gpu-operator")["data"]


def test_reshape_never_leaves_a_dangling_key(api, cluster: FakeCluster) -> None:
    policy = Policy(time_slicing=TimeSlicing(node_cooldown_seconds=0), job_cooldown_seconds=0)
    run(api, [reshape("gpu-node-2", 4, 2)], policy=policy)
    first_key = cluster.get(*NODE, "gpu-node-2")["metadata"]["labels"][r.DEVICE_PLUGIN_CONFIG_LABEL]
    data = cluster.get(*CM, "time-slicing-config", "gpu-operator")["data"]
    assert "ts-4" in data  # the operator's own key is never removed
    [res] = run(api, [reshape("gpu-node-2", 2, 3)], policy=policy, now=NOW + 10)
    assert res.outcome is Outcome.APPLIED and first_key in res.detail
    data = cluster.get(*CM, "time-slicing-config", "gpu-operator")["data"]
    assert first_key not in data and _replicas(cluster, "gpu-node-2") == 3


def test_reshape_failed_key_write_leaves_label_alone(api, cluster: FakeCluster) -> None:
    cluster.inject("PATCH", "/configmaps/", 500)
    [res] = run(api, [reshape("gpu-node-1", 1, 2)])
    assert res.outcome is Outcome.FAILED
    assert (
        cluster.get(*NODE, "gpu-node-1")["metadata"]["labels"][r.DEVICE_PLUGIN_CONFIG_LABEL]
        == "plain"
    )
    assert not [q for q in cluster.writes() if "/nodes/" in q.path]


def test_reshape_refuses_stale_plan_and_replica_limit(api, cluster: FakeCluster) -> None:
    stale, too_many = run(api, [reshape("gpu-node-1", 3, 2), reshape("gpu-node-2", 4, 16)])
    assert stale.outcome is Outcome.SKIPPED and "plan assumed 3" in stale.detail
    assert too_many.skip_reason is Reason.LIMIT_REACHED
    assert not cluster.writes()
