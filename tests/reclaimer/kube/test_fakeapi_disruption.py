"""The fake API server's budgets and evictions answer as a real cluster's do.

Expected: kube-controller-manager's disruption controller (pkg/controller/disruption
disruption.go) and the eviction subresource (pkg/registry/core/pod/storage/eviction.go). Each
case names what the old arithmetic got wrong where it did: percentages and `maxUnavailable`
counted against the owner's scale, healthy meaning Ready and not being deleted, an ownerless pod
expecting nothing, `maxUnavailable` rounding up, a PyTorchJob's scale being its Worker replicas
(training-operator's CRD declares that scale subresource; a TFJob's declares none).
"""

from __future__ import annotations

import re
from typing import Any

import pytest
from fakeapi import FakeCluster

from reclaimer.kube.client import KubeError, call

NS = "team-a"
STS = {"apiVersion": "apps/v1", "kind": "StatefulSet", "name": "w", "uid": "sts-w"}
PYT = {"apiVersion": "kubeflow.org/v1", "kind": "PyTorchJob", "name": "w", "uid": "pyt-w"}
TFJ = {"apiVersion": "kubeflow.org/v1", "kind": "TFJob", "name": "w", "uid": "tfj-w"}
READY = {"type": "Ready", "status": "True"}
OWNERS = {"sts": STS, "pyt": PYT, "tfj": TFJ, "none": None, "sts-gone": STS, "pyt-gone": PYT}


def _pod(i: int, state: str, owner: dict[str, Any] | None) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": f"w-{i}", "namespace": NS, "labels": {"app": "w"}}
    if owner is not None:
        meta["ownerReferences"] = [{**owner, "controller": True}]
    if state == "terminating":
        meta["deletionTimestamp"] = "2026-01-01T00:00:30Z"
    phase = "Pending" if state == "pending" else "Running"
    ready = [READY] if state in ("ready", "terminating") else []
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": meta,
        "spec": {"nodeName": "gpu-node-1", "containers": [{"name": "c", "image": "c:1"}]},
        "status": {"phase": phase, "conditions": ready},
    }


def _owner(ref: dict[str, Any], spec: dict[str, Any]) -> dict[str, Any]:
    meta = {"name": ref["name"], "namespace": NS, "uid": ref["uid"]}
    return {"apiVersion": ref["apiVersion"], "kind": ref["kind"], "metadata": meta, "spec": spec}


def _workers(replicas: int | None, head: str) -> dict[str, Any]:
    """A `head` and a Worker replica spec; `replicas` None leaves the Worker's unset."""
    worker: dict[str, Any] = {"template": {}}
    if replicas is not None:
        worker["replicas"] = replicas
    return {head: {"replicas": 1, "template": {}}, "Worker": worker}


def _world(
    cluster: FakeCluster, states: str, owner: str = "sts", replicas: int | None = None
) -> None:
    """Pods w-0.. in `states` (r ready, u running but unready, p pending, t terminating),
    controlled by `owner`: a StatefulSet of `replicas` (default: as many as pods), a PyTorchJob
    of a Master and `replicas` Workers, a TFJob, nobody, or a StatefulSet or PyTorchJob that is
    gone."""
    names = {"r": "ready", "u": "unready", "p": "pending", "t": "terminating"}
    for i, s in enumerate(states):
        cluster.add(_pod(i, names[s], OWNERS[owner]))
    if owner == "sts":
        n = len(states) if replicas is None else replicas
        cluster.add(_owner(STS, {"replicas": n, "selector": {}}))
    elif owner == "pyt":
        cluster.add(_owner(PYT, {"pytorchReplicaSpecs": _workers(replicas, "Master")}))
    elif owner == "tfj":
        cluster.add(_owner(TFJ, {"tfReplicaSpecs": _workers(len(states) - 1, "Chief")}))


def _pdb(cluster: FakeCluster, name: str = "budget", **spec: object) -> None:
    cluster.add(
        {
            "apiVersion": "policy/v1",
            "kind": "PodDisruptionBudget",
            "metadata": {"name": name, "namespace": NS, "generation": 1},
            "spec": {"selector": {"matchLabels": {"app": "w"}}, **spec},
        }
    )


def _evict(api: Any, name: str = "w-0") -> int:
    body = {
        "apiVersion": "policy/v1",
        "kind": "Eviction",
        "metadata": {"name": name, "namespace": NS},
    }
    try:
        call(api, api.core.create_namespaced_pod_eviction, name, NS, body)
    except KubeError as exc:
        return exc.status
    return 201


CASES = [
    ("min-int-ok", "rrr", "sts", None, {"minAvailable": 2}, 201),
    ("min-int-blocked", "rr", "sts", None, {"minAvailable": 2}, 429),
    ("min-int-ownerless-counts-pods", "rrr", "none", None, {"minAvailable": 2}, 201),
    ("min-pct-ok", "rrrr", "sts", None, {"minAvailable": "50%"}, 201),
    ("min-pct-blocked", "rr", "sts", None, {"minAvailable": "100%"}, 429),
    ("min-pct-ownerless-expects-nothing", "rrrr", "none", None, {"minAvailable": "50%"}, 429),
    ("min-pct-of-the-scale", "rrr", "sts", 6, {"minAvailable": "50%"}, 429),
    ("max-ok", "rrr", "sts", None, {"maxUnavailable": 1}, 201),
    ("max-already-unavailable", "rrp", "sts", None, {"maxUnavailable": 1}, 429),
    ("max-of-the-scale", "rrr", "sts", 4, {"maxUnavailable": 1}, 429),
    ("max-ownerless-expects-nothing", "rrr", "none", None, {"maxUnavailable": 1}, 429),
    ("max-owner-without-scale", "rrr", "tfj", None, {"maxUnavailable": 1}, 429),
    ("max-owner-gone", "rrr", "sts-gone", None, {"maxUnavailable": 1}, 429),
    ("max-of-the-pytorchjobs-workers", "rrrr", "pyt", 3, {"maxUnavailable": 1}, 201),
    ("max-pytorchjob-short-of-workers", "rrpp", "pyt", 3, {"maxUnavailable": 1}, 429),
    ("min-pct-of-the-pytorchjobs-workers", "rrrr", "pyt", 3, {"minAvailable": "100%"}, 201),
    ("max-pytorchjob-without-worker-replicas", "rrrr", "pyt", None, {"maxUnavailable": 1}, 429),
    ("max-pytorchjob-gone", "rrrr", "pyt-gone", None, {"maxUnavailable": 1}, 429),
    ("max-pct-rounds-up", "rr", "sts", None, {"maxUnavailable": "10%"}, 201),
    ("max-pct-zero", "rr", "sts", None, {"maxUnavailable": "0%"}, 429),
    ("terminating-is-not-healthy", "rrt", "sts", None, {"minAvailable": 2}, 429),
    ("unready-is-not-healthy", "rru", "sts", None, {"minAvailable": 3}, 429),
    ("unready-goes-when-the-budget-is-whole", "urr", "sts", None, {"minAvailable": 2}, 201),
    (
        "unready-always-allowed",
        "urr",
        "sts",
        None,
        {"minAvailable": 3, "unhealthyPodEvictionPolicy": "AlwaysAllow"},
        201,
    ),
    ("pending-ignores-budgets", "prr", "sts", None, {"minAvailable": 3}, 201),
]


@pytest.mark.parametrize(
    ("states", "owner", "replicas", "spec", "status"),
    [pytest.param(*c[1:], id=c[0]) for c in CASES],
)
def test_eviction_honours_pdbs(
    api: Any,
    cluster: FakeCluster,
    states: str,
    owner: str,
    replicas: int | None,
    spec: dict[str, object],
    status: int,
) -> None:
    cluster.objects.clear()
    _world(cluster, states, owner, replicas)
    _pdb(cluster, **spec)
    assert _evict(api) == status
    pod = cluster.get("", "v1", "pods", "w-0", NS)
    gone = pod is None or bool(pod["metadata"].get("deletionTimestamp"))
    assert gone == (status == 201)


def test_budget_status_is_the_controllers(api: Any, cluster: FakeCluster) -> None:
    cluster.objects.clear()
    _world(cluster, "rrut", "sts", 5)
    _pdb(cluster, maxUnavailable="25%")
    pdb = call(api, api.policy.read_namespaced_pod_disruption_budget, "budget", NS)
    status = {k: pdb["status"][k] for k in ("expectedPods", "desiredHealthy", "currentHealthy")}
    assert status == {"expectedPods": 5, "desiredHealthy": 3, "currentHealthy": 2}
    assert pdb["status"]["disruptionsAllowed"] == 0


NO_REPLICAS = 'the spec replicas field ".spec.pytorchReplicaSpecs.Worker.replicas" does not exist'


def _status(api: Any) -> dict[str, Any]:
    return call(api, api.policy.read_namespaced_pod_disruption_budget, "budget", NS)["status"]


def test_a_pytorchjobs_budget_counts_its_worker_replicas(api: Any, cluster: FakeCluster) -> None:
    """4 Ready pods (a Master and 3 Workers), a scale of 3 (the Worker replicas), maxUnavailable
    1: expected 3, desired 3 - 1 = 2, healthy 4, so 4 - 2 = 2 disruptions allowed."""
    cluster.objects.clear()
    _world(cluster, "rrrr", "pyt", 3)
    _pdb(cluster, maxUnavailable=1)
    status = _status(api)
    keys = ("expectedPods", "desiredHealthy", "currentHealthy", "disruptionsAllowed")
    assert {k: status[k] for k in keys} == dict(zip(keys, (3, 2, 4, 2), strict=True))
    assert [c["reason"] for c in status["conditions"]] == ["SufficientPods"]


@pytest.mark.parametrize(
    ("owner", "replicas", "message"),
    [
        ("tfj", None, r"^tfjobs\.kubeflow\.org does not implement the scale subresource$"),
        ("pyt", None, re.escape(f"Internal error occurred: {NO_REPLICAS}")),
        ("pyt-gone", None, r'^found no controllers for pod "w-\d"$'),
        ("sts-gone", None, r'^found no controllers for pod "w-\d"$'),
    ],
    ids=["tfjob-has-no-scale", "no-worker-replicas", "pytorchjob-gone", "statefulset-gone"],
)
def test_a_budget_whose_scale_cannot_be_had_fails_its_sync(
    api: Any, cluster: FakeCluster, owner: str, replicas: int | None, message: str
) -> None:
    """The reason behind the 429s above: the sync failed, and the condition says why."""
    cluster.objects.clear()
    _world(cluster, "rrrr", owner, replicas)
    _pdb(cluster, maxUnavailable=1)
    status = _status(api)
    [condition] = status["conditions"]
    assert status["disruptionsAllowed"] == 0
    assert (condition["status"], condition["reason"]) == ("False", "SyncFailed")
    assert re.search(message, condition["message"]), condition["message"]


@pytest.mark.parametrize("deployment", [True, False], ids=["counted-once", "deployment-gone"])
def test_a_rollouts_replicasets_count_by_their_controller(
    api: Any, cluster: FakeCluster, deployment: bool
) -> None:
    """Mid-rollout, a Deployment of 3 has ReplicaSets of 2 and 1, with 3 Ready pods: its scale
    is counted once (expected 3, not 3 for each ReplicaSet); with the Deployment gone, each
    ReplicaSet's own scale is read through its scale subresource (2 + 1). Either way
    3 - (3 - 1) = 1 is allowed."""
    cluster.objects.clear()
    dep = {"apiVersion": "apps/v1", "kind": "Deployment", "name": "w", "uid": "dep-w"}
    if deployment:
        cluster.add(_owner(dep, {"replicas": 3}))
    for rs, replicas in (("w-a", 2), ("w-b", 1)):
        ref = {**dep, "name": rs, "kind": "ReplicaSet", "uid": f"rs-{rs}"}
        owned = _owner(ref, {"replicas": replicas})
        owned["metadata"]["ownerReferences"] = [{**dep, "controller": True}]
        cluster.add(owned)
        for j in range(replicas):
            pod = _pod(j, "ready", ref)
            pod["metadata"]["name"] = f"{rs}-{j}"
            cluster.add(pod)
    _pdb(cluster, maxUnavailable=1)
    status = _status(api)
    keys = ("expectedPods", "desiredHealthy", "currentHealthy", "disruptionsAllowed")
    assert {k: status[k] for k in keys} == dict(zip(keys, (3, 2, 3, 1), strict=True))


def _scale(api: Any, plural: str) -> dict[str, Any]:
    get = api.custom.get_namespaced_custom_object_scale
    return call(api, get, "kubeflow.org", "v1", NS, plural, "w")


def test_a_pytorchjob_serves_its_workers_as_its_scale(api: Any, cluster: FakeCluster) -> None:
    cluster.objects.clear()
    _world(cluster, "rrrr", "pyt", 3)
    job = cluster.get("kubeflow.org", "v1", "pytorchjobs", "w", NS)
    selector = "training.kubeflow.org/job-name=w,training.kubeflow.org/replica-type=worker"
    job["status"] = {"replicaStatuses": {"Worker": {"active": 2, "selector": selector}}}
    scale = _scale(api, "pytorchjobs")
    assert (scale["apiVersion"], scale["kind"]) == ("autoscaling/v1", "Scale")
    assert (scale["metadata"]["name"], scale["metadata"]["uid"]) == ("w", "pyt-w")
    assert scale["spec"] == {"replicas": 3}
    assert scale["status"] == {"replicas": 2, "selector": selector}


def test_a_scale_that_cannot_be_served_answers_as_the_api_server(
    api: Any, cluster: FakeCluster
) -> None:
    """A CRD without a scale subresource: 404; one whose object lacks the replicas: 500."""
    cluster.objects.clear()
    _world(cluster, "rr", "tfj")
    with pytest.raises(KubeError) as no_subresource:
        _scale(api, "tfjobs")
    assert no_subresource.value.status == 404
    cluster.objects.clear()
    _world(cluster, "rr", "pyt", None)
    with pytest.raises(KubeError) as no_replicas:
        _scale(api, "pytorchjobs")
    assert no_replicas.value.status == 500
    assert NO_REPLICAS in no_replicas.value.message


def test_two_pdbs_answer_500(api: Any, cluster: FakeCluster) -> None:
    cluster.objects.clear()
    _world(cluster, "rrr")
    _pdb(cluster, "one", minAvailable=0)
    _pdb(cluster, "two", minAvailable=0)
    assert _evict(api) == 500
