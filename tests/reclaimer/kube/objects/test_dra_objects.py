"""DRA in the object decoding: a pod's GPUs from its claims, a node's from its ResourceSlices,
pending demand from claims not yet allocated, and claims no one pod's stop frees."""

from __future__ import annotations

import copy
from typing import Any

import pytest
from draobjects import claim, device_class, pod_with_claim, resource_slice, template

from reclaimer.kube.objects.convert import ClusterObjects, group_by_kind, to_cluster_view
from reclaimer.kube.objects.dra import GpuClasses

DRA = "dra:gpu.nvidia.com"  # a resource of its own: no device-plugin slot holds it


def _pod(name: str, node: str | None = "n1", ns: str = "ns") -> dict[str, Any]:
    body: dict[str, Any] = {"apiVersion": "v1", "kind": "Pod"}
    body["metadata"] = {
        "name": name,
        "namespace": ns,
        "uid": f"uid-{name}",
        "creationTimestamp": 10,
    }
    body["spec"] = {"containers": [{"name": "main"}], **({"nodeName": node} if node else {})}
    body["status"] = {"phase": "Running" if node else "Pending"}
    return body


def _running(name: str, devices: tuple[int, ...]) -> tuple[dict[str, Any], dict[str, Any]]:
    """A running pod and the claim made for it from template `gpus`, allocated and reserved."""
    pod = pod_with_claim(_pod(name), template_name="gpus", made=f"{name}-gpus")
    made = claim(
        f"{name}-gpus",
        "ns",
        len(devices),
        node="n1",
        devices=devices,
        reserved_for=(pod["metadata"],),
        owner=pod["metadata"],
    )
    return pod, made


def _objects(pods: list[Any], claims: list[Any], **kw: Any) -> ClusterObjects:
    return ClusterObjects(
        pods=pods,
        nodes=[{"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n1"}}],
        resource_claims=claims,
        resource_claim_templates=[template("gpus", "ns", 2)],
        resource_slices=[resource_slice("n1", 4)],
        device_classes=[device_class()],
        **kw,
    )


def test_running_pod_holds_its_claims_devices_and_the_node_its_slices() -> None:
    pod, made = _running("a", (0, 1))
    view = to_cluster_view(_objects([pod], [made]), 0.0)
    (p,) = view.pods
    assert (p.key, p.gpus, p.node) == ("ns/a", 2, "n1")
    (job,) = view.jobs  # a bare GPU pod is its own gang, of its claim's 2 GPUs
    assert job.gpus == 2
    (node,) = view.nodes
    assert (node.name, node.gpus, node.dra, dict(node.mig)) == ("n1", 4, True, {DRA: 4})
    assert dict(p.mig) == {DRA: 2}


def test_pending_pod_asks_what_its_template_asks_until_its_claim_is_made() -> None:
    waiting = pod_with_claim(_pod("w", node=None), template_name="gpus")
    view = to_cluster_view(_objects([waiting], []), 0.0)
    (demand,) = view.pending
    assert (demand.job, demand.gpus) == ("ns/w", 2)


def test_pending_pod_asks_what_its_unallocated_claim_asks() -> None:
    waiting = pod_with_claim(_pod("w", node=None), template_name="gpus", made="w-gpus")
    made = claim("w-gpus", "ns", 3, owner=waiting["metadata"])
    (demand,) = to_cluster_view(_objects([waiting], [made]), 0.0).pending
    assert demand.gpus == 3  # the claim's own request, not the template's 2


def test_allocation_mode_all_asks_for_the_largest_nodes_devices() -> None:
    waiting = pod_with_claim(_pod("w", node=None), template_name="every")
    objs = _objects([waiting], [])
    objs = ClusterObjects(
        **{
            **objs.__dict__,
            "resource_claim_templates": [template("every", "ns", all_=True)],
            "resource_slices": [resource_slice("n1", 4), resource_slice("n2", 8)],
        }
    )
    (demand,) = to_cluster_view(objs, 0.0).pending
    assert demand.gpus == 8


def test_claim_two_pods_share_is_held_on_its_node_and_no_pods() -> None:
    a, b = _pod("a"), _pod("b")
    shared = claim(
        "shared", "ns", node="n1", devices=(3,), reserved_for=(a["metadata"], b["metadata"])
    )
    pods = [pod_with_claim(p, claim_name="shared") for p in (a, b)]
    view = to_cluster_view(_objects(pods, [shared]), 0.0)
    assert [(p.key, p.gpus) for p in view.pods] == []  # bare pods with no GPU of their own
    (node,) = view.nodes
    assert (dict(node.claims_held), dict(node.claims_releasing)) == ({DRA: 1}, {})


def test_claim_no_live_pod_reserves_is_releasing_on_its_node() -> None:
    gone = {"name": "gone", "uid": "uid-gone"}
    left = claim("left", "ns", node="n1", devices=(0, 1), reserved_for=(gone,))
    view = to_cluster_view(_objects([], [left]), 0.0)
    (node,) = view.nodes
    assert (dict(node.claims_held), dict(node.claims_releasing)) == ({}, {DRA: 2})


def test_devices_of_other_drivers_are_not_gpus() -> None:
    pod, made = _running("a", (0,))
    made["status"]["allocation"]["devices"]["results"][0]["driver"] = "nic.example.com"
    objs = _objects([pod], [made])
    objs = ClusterObjects(
        **{**objs.__dict__, "resource_slices": [resource_slice("n1", 2, driver="nic.example.com")]}
    )
    view = to_cluster_view(objs, 0.0)
    assert view.pods == () and view.nodes == ()


def test_gpu_drivers_and_classes_are_a_setting() -> None:
    pod, made = _running("a", (0,))
    for r in made["status"]["allocation"]["devices"]["results"]:
        r["driver"] = "gpu.example.com"
    objs = _objects([pod], [made])
    objs = ClusterObjects(
        **{**objs.__dict__, "resource_slices": [resource_slice("n1", 2, driver="gpu.example.com")]}
    )
    view = to_cluster_view(objs, 0.0, gpu_classes=GpuClasses(gpu_drivers=("gpu.example.com",)))
    assert [(p.key, p.gpus) for p in view.pods] == [("ns/a", 1)]
    assert [(n.name, n.gpus) for n in view.nodes] == [("n1", 2)]


def test_a_device_class_selecting_a_gpu_driver_is_a_gpu_class() -> None:
    waiting = pod_with_claim(_pod("w", node=None), template_name="big")
    objs = _objects([waiting], [])
    objs = ClusterObjects(
        **{
            **objs.__dict__,
            "resource_claim_templates": [template("big", "ns", 2, device_class_name="h100s")],
            "device_classes": [device_class("h100s")],
        }
    )
    (demand,) = to_cluster_view(objs, 0.0).pending
    assert demand.gpus == 2
    unknown = ClusterObjects(**{**objs.__dict__, "device_classes": []})
    assert to_cluster_view(unknown, 0.0).pending == ()


def test_mig_devices_are_slots_of_their_profile() -> None:
    objs = _objects([], [])
    objs = ClusterObjects(
        **{**objs.__dict__, "resource_slices": [resource_slice("n1", 7, mig="1g.10gb")]}
    )
    (node,) = to_cluster_view(objs, 0.0).nodes
    assert dict(node.mig) == {"dra:gpu.nvidia.com/mig-1g.10gb": 7}


@pytest.mark.parametrize("version", ["v1beta1", "v1beta2"])
def test_beta_objects_read_the_same(version: str) -> None:
    """v1beta2 has v1's shape; v1beta1 nests a device's attributes under `basic` and a request's
    class and count in the request itself (k8s.io/api resource/v1beta1/types.go)."""
    pod, made = _running("a", (0, 1))
    waiting = pod_with_claim(_pod("w", node=None), template_name="gpus")
    slice_ = resource_slice("n1", 4)
    tmpl = template("gpus", "ns", 2)
    if version == "v1beta1":
        for d in slice_["spec"]["devices"]:
            d["basic"] = {"attributes": d.pop("attributes")}
        for req in tmpl["spec"]["spec"]["devices"]["requests"]:
            req.update(req.pop("exactly"))
    node = {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n1"}}
    docs = [node, pod, waiting, made, slice_, tmpl, device_class()]
    for d in docs[3:]:
        d["apiVersion"] = f"resource.k8s.io/{version}"
    objs, notes = group_by_kind(copy.deepcopy(docs))
    assert notes == []
    view = to_cluster_view(objs, 0.0)
    assert [(p.key, p.gpus) for p in view.pods] == [("ns/a", 2), ("ns/w", 2)]
    assert [(d.job, d.gpus) for d in view.pending] == [("ns/w", 2)]
    assert [(n.name, n.gpus) for n in view.nodes] == [("n1", 4)]


def test_a_workload_counts_the_gpus_its_pod_templates_claims_ask_for() -> None:
    """A suspended job has no pods: its size, what a resume must fit, is its templates'."""
    pod_spec = pod_with_claim({"spec": {"containers": [{"name": "main"}]}}, template_name="gpus")
    job = {
        "apiVersion": "kubeflow.org/v1",
        "kind": "PyTorchJob",
        "metadata": {"name": "train", "namespace": "ns", "uid": "u1", "creationTimestamp": 10},
        "spec": {
            "runPolicy": {"suspend": True},
            "pytorchReplicaSpecs": {
                "Master": {"replicas": 1, "template": {"spec": pod_spec["spec"]}},
                "Worker": {"replicas": 3, "template": {"spec": copy.deepcopy(pod_spec["spec"])}},
            },
        },
    }
    objs = _objects([], [])
    view = to_cluster_view(ClusterObjects(**{**objs.__dict__, "workloads": [job]}), 0.0)
    (found,) = view.jobs
    assert (found.key, found.gpus, found.suspended) == ("ns/train", 8, True)  # 4 pods x 2
    assert "gpu-reclaim.io/dra-claims" not in str(job)  # counted on a copy


def test_a_pools_older_generation_of_slices_is_stale() -> None:
    """A driver republishing a pool bumps `pool.generation`; the old slices are being replaced."""
    old, new = resource_slice("n1", 8), resource_slice("n1", 4)
    old["metadata"]["name"] += "-old"
    new["spec"]["pool"]["generation"] = 2
    objs = _objects([], [])
    objs = ClusterObjects(**{**objs.__dict__, "resource_slices": [old, new]})
    (node,) = to_cluster_view(objs, 0.0).nodes
    assert dict(node.mig) == {DRA: 4}


def test_a_device_two_claims_share_is_held_once_on_its_node() -> None:
    """Consumable capacity: each claim's result names the device with a `shareID` of its own."""
    a, b = _pod("a"), _pod("b")
    mine = claim("mine", "ns", node="n1", devices=(2,), reserved_for=(a["metadata"],))
    yours = claim("yours", "ns", node="n1", devices=(2,), reserved_for=(b["metadata"],))
    for c, share in ((mine, "s-1"), (yours, "s-2")):
        c["status"]["allocation"]["devices"]["results"][0]["shareID"] = share
    pods = [pod_with_claim(a, claim_name="mine"), pod_with_claim(b, claim_name="yours")]
    view = to_cluster_view(_objects(pods, [mine, yours]), 0.0)
    assert view.pods == ()  # no pod holds the device alone
    (node,) = view.nodes
    assert dict(node.claims_held) == {DRA: 1}


def test_admin_access_holds_no_device() -> None:
    pod, made = _running("a", (0, 1))
    made["status"]["allocation"]["devices"]["results"][1]["adminAccess"] = True
    view = to_cluster_view(_objects([pod], [made]), 0.0)
    assert [(p.key, p.gpus) for p in view.pods] == [("ns/a", 1)]


def test_a_volcano_job_counts_its_tasks_template_claims() -> None:
    spec = pod_with_claim({"spec": {"containers": [{"name": "main"}]}}, template_name="gpus")
    job = {
        "apiVersion": "batch.volcano.sh/v1alpha1",
        "kind": "Job",
        "metadata": {"name": "sweep", "namespace": "ns", "uid": "u2", "creationTimestamp": 10},
        "spec": {
            "queue": "research",
            "tasks": [{"name": "w", "replicas": 3, "template": {"spec": spec["spec"]}}],
        },
        "status": {"state": {"phase": "Running"}},
    }
    objs = _objects([], [])
    view = to_cluster_view(ClusterObjects(**{**objs.__dict__, "volcano_jobs": [job]}), 0.0)
    (found,) = view.jobs
    assert (found.key, found.gpus, dict(found.mig)) == ("ns/sweep", 6, {DRA: 6})
