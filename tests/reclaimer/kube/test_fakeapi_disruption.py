"""The fake API server's budgets and evictions answer as a real cluster's do.

Expected: kube-controller-manager's disruption controller (pkg/controller/disruption
disruption.go) and the eviction subresource (pkg/registry/core/pod/storage/eviction.go). Each
case names what the old arithmetic got wrong where it did: percentages and `maxUnavailable`
counted against the owner's scale, healthy meaning Ready and not being deleted, an ownerless pod
expecting nothing, `maxUnavailable` rounding up.
"""

from __future__ import annotations

from typing import Any

import pytest
from fakeapi import FakeCluster

from reclaimer.kube.client import KubeError, call

NS = "team-a"
STS = {"apiVersion": "apps/v1", "kind": "StatefulSet", "name": "w", "uid": "sts-w"}
PYT = {"apiVersion": "kubeflow.org/v1", "kind": "PyTorchJob", "name": "w", "uid": "pyt-w"}
READY = {"type": "Ready", "status": "True"}


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


def _world(
    cluster: FakeCluster, states: str, owner: str = "sts", replicas: int | None = None
) -> None:
    """Pods w-0.. in `states` (r ready, u running but unready, p pending, t terminating),
    owned by a StatefulSet of `replicas` (default: as many as pods), a PyTorchJob, or nobody."""
    ref = {"sts": STS, "pyt": PYT, "none": None, "gone": STS}[owner]
    names = {"r": "ready", "u": "unready", "p": "pending", "t": "terminating"}
    for i, s in enumerate(states):
        cluster.add(_pod(i, names[s], ref))
    if owner == "sts":
        spec = {"replicas": len(states) if replicas is None else replicas, "selector": {}}
        meta = {"name": "w", "namespace": NS, "uid": "sts-w"}
        cluster.add(
            {"apiVersion": "apps/v1", "kind": "StatefulSet", "metadata": meta, "spec": spec}
        )


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
    ("max-owner-without-scale", "rrr", "pyt", None, {"maxUnavailable": 1}, 429),
    ("max-owner-gone", "rrr", "gone", None, {"maxUnavailable": 1}, 429),
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


def test_two_pdbs_answer_500(api: Any, cluster: FakeCluster) -> None:
    cluster.objects.clear()
    _world(cluster, "rrr")
    _pdb(cluster, "one", minAvailable=0)
    _pdb(cluster, "two", minAvailable=0)
    assert _evict(api) == 500
