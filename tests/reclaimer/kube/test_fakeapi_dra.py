"""The fake serves `resource.k8s.io` and runs the resourceclaim controller as the real one does,
and the reclaimer reads DRA objects through the real client at the version the server has.

What the controller does is written here from kubernetes/kubernetes
pkg/controller/resourceclaim/controller.go, as `fakeapi.resourceclaims` cites it: a pod's
template gets a claim owned by the pod and named in its status; a claim whose pods are gone loses
its reservation and its allocation; a template claim goes with its pod; a claim made by hand
stays, deallocated.
"""

from __future__ import annotations

from typing import Any

import pytest
from draobjects import claim, device_class, pod_with_claim, resource_slice, template
from fakeapi import FakeApiServer, FakeCluster
from fakeapi import resourceclaims as rc
from kubernetes import client as k8s

from kube.cluster_fixture import TIMEOUT_S
from reclaimer.kube.client import api_from_configuration
from reclaimer.kube.read import read_cluster_sync

PODS = ("", "v1", "pods")
NS = "research"


def _pod(name: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": NS},
        "spec": {"containers": [{"name": "main", "image": "m:1"}]},
        "status": {"phase": "Pending"},
    }


def _world() -> FakeCluster:
    c = FakeCluster()
    c.add(
        {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n1"}},
        resource_slice("n1", 4),
        device_class(),
        template("two-gpus", NS, 2),
        pod_with_claim(_pod("train-0"), template_name="two-gpus"),
    )
    return c


def test_a_template_claim_is_made_for_its_pod_and_named_in_its_status() -> None:
    c = _world()
    steps = rc.reconcile(c)
    (made,) = c.all(*rc.CLAIMS)
    name = made["metadata"]["name"]
    assert steps == [f"created claim {NS}/{name} for pod train-0"]
    assert name.startswith("train-0-gpus-")
    pod = c.get(*PODS, "train-0", NS)
    assert pod is not None
    assert pod["status"]["resourceClaimStatuses"] == [{"name": "gpus", "resourceClaimName": name}]
    (owner,) = made["metadata"]["ownerReferences"]
    assert (owner["kind"], owner["name"], owner["uid"], owner["controller"]) == (
        "Pod",
        "train-0",
        pod["metadata"]["uid"],
        True,
    )
    assert made["spec"] == template("two-gpus", NS, 2)["spec"]["spec"]
    assert rc.reconcile(c) == []  # made once


def test_a_template_claim_goes_with_its_pod() -> None:
    c = _world()
    rc.reconcile(c)
    rc.bind(c, NS, "train-0", "n1", ["gpu-0", "gpu-1"])
    (made,) = c.all(*rc.CLAIMS)
    assert [r["name"] for r in made["status"]["reservedFor"]] == ["train-0"]
    c.delete(PODS, NS, "train-0", dry=False)  # graceful: Terminating, still bound
    assert rc.reconcile(c) == []  # the kubelet has not confirmed it gone: still reserved
    c.finish_termination(NS, "train-0")
    name = made["metadata"]["name"]
    assert rc.reconcile(c) == [f"deallocated claim {NS}/{name}", f"deleted claim {NS}/{name}"]
    assert c.all(*rc.CLAIMS) == []


def test_a_claim_made_by_hand_outlives_its_pods_and_is_deallocated() -> None:
    c = _world()
    a, b = _pod("a"), _pod("b")
    c.add(a, b)
    metas = [m for m in (c.get(*PODS, n, NS) for n in ("a", "b")) if m is not None]
    shared = claim(
        "shared", NS, node="n1", devices=(3,), reserved_for=tuple(m["metadata"] for m in metas)
    )
    c.add(shared)
    c.delete(PODS, NS, "a", dry=False)  # not bound: gone at once
    rc.reconcile(c)
    kept = c.get(*rc.CLAIMS, "shared", NS)
    assert kept is not None and [r["name"] for r in kept["status"]["reservedFor"]] == ["b"]
    assert "allocation" in kept["status"]
    c.delete(PODS, NS, "b", dry=False)
    assert rc.reconcile(c) == [f"deallocated claim {NS}/shared"]
    kept = c.get(*rc.CLAIMS, "shared", NS)
    assert kept is not None and "allocation" not in kept["status"]


@pytest.mark.parametrize(
    ("served", "read_at"),
    [
        pytest.param(("v1", "v1beta2", "v1beta1"), "v1", id="1.34-v1"),
        pytest.param(("v1beta2", "v1beta1"), "v1beta2", id="1.33-v1beta2"),
        pytest.param(("v1beta1",), "v1beta1", id="1.32-v1beta1"),
        pytest.param((), None, id="no-dra"),
    ],
)
def test_the_reader_takes_the_first_version_served(
    served: tuple[str, ...], read_at: str | None
) -> None:
    c = _world()
    c.dra_versions = served
    rc.reconcile(c)
    rc.bind(c, NS, "train-0", "n1", ["gpu-0", "gpu-1"])
    srv = FakeApiServer(c).start()
    api = api_from_configuration(k8s.Configuration(host=srv.url), timeout=TIMEOUT_S)
    try:
        view = read_cluster_sync(api, now=1.0)
    finally:
        api.close()
        srv.stop()
    dra_paths = sorted(
        {r.path for r in c.requests if "resource.k8s.io" in r.path and r.code == 200}
    )
    if read_at is None:
        assert dra_paths == [] and view.nodes == () and view.pods == ()
        return
    assert dra_paths == [
        f"/apis/resource.k8s.io/{read_at}/{plural}"
        for plural in (
            "deviceclasses",
            "resourceclaims",
            "resourceclaimtemplates",
            "resourceslices",
        )
    ]
    assert [(p.key, p.gpus, p.node) for p in view.pods] == [(f"{NS}/train-0", 2, "n1")]
    assert [(n.name, n.gpus, n.dra) for n in view.nodes] == [("n1", 4, True)]
