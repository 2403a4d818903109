"""Reshape through the actuator: new ConfigMap key first, then the node label, no dangling key."""

from __future__ import annotations

import yaml
from fakeapi import FakeCluster

from kube.plan_fixture import CM, NODE, NOW, events_for, reshape, run
from reclaimer.decisions import Action, ActionKind, Evidence, Outcome, Reason
from reclaimer.kube.objects import resources as r
from reclaimer.kube.read import read_cluster_sync
from reclaimer.policy.settings import Policy, TimeSlicing


def _replicas(cluster: FakeCluster, node: str) -> int:
    key = cluster.get(*NODE, node)["metadata"]["labels"][r.DEVICE_PLUGIN_CONFIG_LABEL]
    data = cluster.get(*CM, "time-slicing-config", "gpu-operator")["data"]
    assert key in data, f"node {node} points at missing key {key}"
    slicing = (yaml.safe_load(data[key]).get("sharing") or {}).get("timeSlicing") or {}
    return next((x["replicas"] for x in slicing.get("resources", [])), 1)


def _label(cluster: FakeCluster, node: str) -> str | None:
    labels = cluster.get(*NODE, node)["metadata"].get("labels") or {}
    return labels.get(r.DEVICE_PLUGIN_CONFIG_LABEL)


def _notes(cluster: FakeCluster, node: str) -> dict[str, str]:
    return dict(cluster.get(*NODE, node)["metadata"].get("annotations") or {})


def _data(cluster: FakeCluster) -> dict[str, str]:
    return dict(cluster.get(*CM, "time-slicing-config", "gpu-operator")["data"])


def test_reshape_writes_the_key_then_relabels_once_it_is_projected(
    api, cluster: FakeCluster
) -> None:
    [res] = run(api, [reshape("gpu-node-1", 1, 2)])
    assert res.outcome is Outcome.APPLIED, res
    key = _notes(cluster, "gpu-node-1")[r.RESHAPE_KEY]
    assert key in _data(cluster) and "relabel once the kubelet projects it" in res.detail
    assert _label(cluster, "gpu-node-1") == "plain"  # not yet: the plugin could not read the key
    [res] = run(api, [reshape("gpu-node-1", 1, 2)], now=NOW + 30)
    assert res.outcome is Outcome.SKIPPED and "not projected yet" in res.detail
    assert _label(cluster, "gpu-node-1") == "plain"
    [res] = run(api, [reshape("gpu-node-1", 1, 2)], now=NOW + 90)
    assert res.outcome is Outcome.APPLIED, res
    assert _label(cluster, "gpu-node-1") == key and _replicas(cluster, "gpu-node-1") == 2
    notes = _notes(cluster, "gpu-node-1")
    assert (notes[r.RESHAPE_TO], notes[r.RESHAPE_FROM_KEY]) == ("2", "plain")
    assert r.RESHAPE_KEY not in notes and r.RESHAPE_KEY_AT not in notes
    assert [e["reason"] for e in events_for(cluster, "gpu-node-1")] == ["GpuReclaimReshaped"] * 2
    assert "plain" in _data(cluster)


def _relabel(api, cluster: FakeCluster, node: str, old: int, new: int, now: float) -> str:
    policy = Policy(time_slicing=TimeSlicing(node_cooldown_seconds=0), job_cooldown_seconds=0)
    run(api, [reshape(node, old, new)], policy=policy, now=now)
    [res] = run(api, [reshape(node, old, new)], policy=policy, now=now + 90)
    assert res.outcome is Outcome.APPLIED, res
    return str(_label(cluster, node))


def test_an_old_key_stays_until_feature_discovery_shows_the_new_replicas(
    api, cluster: FakeCluster
) -> None:
    first = _relabel(api, cluster, "gpu-node-2", 4, 2, NOW)
    assert "ts-4" in _data(cluster)  # the operator's own key is never removed
    second = _relabel(api, cluster, "gpu-node-2", 2, 3, NOW + 200)
    assert first in _data(cluster)  # GFD still says 2 replicas: the plugin may still read it
    assert _notes(cluster, "gpu-node-2")[r.RESHAPE_FROM_KEY] == first
    cluster.get(*NODE, "gpu-node-2")["metadata"]["labels"][r.GPU_REPLICAS_LABEL] = "3"
    third = _relabel(api, cluster, "gpu-node-1", 1, 2, NOW + 400)  # any later reshape cleans
    data = _data(cluster)
    assert first not in data and second in data and third in data
    assert _replicas(cluster, "gpu-node-2") == 3


def test_an_unlabelled_node_starts_from_the_operators_default_config(
    api, cluster: FakeCluster
) -> None:
    node = cluster.get(*NODE, "gpu-node-2")
    del node["metadata"]["labels"][r.DEVICE_PLUGIN_CONFIG_LABEL]
    cluster.add(
        {
            "apiVersion": "nvidia.com/v1",
            "kind": "ClusterPolicy",
            "metadata": {"name": "cluster-policy"},
            "spec": {
                "devicePlugin": {"config": {"name": "time-slicing-config", "default": "ts-4"}}
            },
        }
    )
    key = _relabel(api, cluster, "gpu-node-2", 4, 2, NOW)
    assert _replicas(cluster, "gpu-node-2") == 2 and key.startswith("gpu-reclaim-r2-")
    assert _notes(cluster, "gpu-node-2")[r.RESHAPE_FROM_KEY] == "ts-4"


def test_without_a_cluster_policy_an_unlabelled_node_is_not_time_sliced(
    api, cluster: FakeCluster
) -> None:
    node = cluster.get(*NODE, "gpu-node-2")
    del node["metadata"]["labels"][r.DEVICE_PLUGIN_CONFIG_LABEL]
    [res] = run(api, [reshape("gpu-node-2", 4, 2)])
    assert (
        res.outcome is Outcome.SKIPPED and "runs 1 replicas now, the plan assumed 4" in res.detail
    )


def test_reshape_failed_key_write_leaves_label_alone(api, cluster: FakeCluster) -> None:
    cluster.inject("PATCH", "/configmaps/", 500)
    [res] = run(api, [reshape("gpu-node-1", 1, 2)])
    assert res.outcome is Outcome.FAILED
    assert (
        cluster.get(*NODE, "gpu-node-1")["metadata"]["labels"][r.DEVICE_PLUGIN_CONFIG_LABEL]
        == "plain"
    )
    assert not [q for q in cluster.writes() if "/nodes/" in q.path]
    assert r.RESHAPE_KEY not in _notes(cluster, "gpu-node-1")


def test_reshape_refuses_stale_plan_and_replica_limit(api, cluster: FakeCluster) -> None:
    stale, too_many = run(api, [reshape("gpu-node-1", 3, 2), reshape("gpu-node-2", 4, 16)])
    assert stale.outcome is Outcome.SKIPPED and "plan assumed 3" in stale.detail
    assert too_many.skip_reason is Reason.LIMIT_REACHED
    assert not cluster.writes()


def test_a_lowering_to_one_replica_ends_time_slicing_and_records_its_reason(
    api, cluster: FakeCluster
) -> None:
    """gpu-node-2 (4 replicas) lowered to 1 because its pods crashed: the new key has no
    time-slicing for nvidia.com/gpu (the plugin needs replicas >= 2 in one), and the node keeps
    the plan's reason, which the next snapshot reads (the planner holds raises by it)."""
    down = Action(ActionKind.RESHAPE, "gpu-node-2", Reason.PODS_CRASHED, Evidence(), None, 4, 1)
    run(api, [down])
    [res] = run(api, [down], now=NOW + 90)
    assert res.outcome is Outcome.APPLIED, res
    key = _label(cluster, "gpu-node-2")
    assert key is not None and key.startswith("gpu-reclaim-r1-")
    assert "timeSlicing" not in (yaml.safe_load(_data(cluster)[key]).get("sharing") or {})
    assert _replicas(cluster, "gpu-node-2") == 1
    assert _notes(cluster, "gpu-node-2")[r.RESHAPE_REASON] == "SharedPodsCrashed"
    node = next(n for n in read_cluster_sync(api, now=NOW + 100).nodes if n.name == "gpu-node-2")
    assert (node.replicas, node.reshape_reason, node.last_reshape) == (
        1,
        "SharedPodsCrashed",
        NOW + 90,
    )
