"""MIG in the object decoding: what pods, workload templates and PodGroups ask for per device
resource, and which nodes are MIG-enabled (mixed strategy resources, or the single strategy)."""

from __future__ import annotations

from typing import Any

import pytest

from reclaimer.kube.objects.convert import ClusterObjects, to_cluster_view

SMALL, BIG, GPU = "nvidia.com/mig-1g.10gb", "nvidia.com/mig-3g.40gb", "nvidia.com/gpu"


def _spec(*limits: dict[str, str], init: dict[str, str] | None = None) -> dict[str, Any]:
    spec: dict[str, Any] = {"containers": [{"resources": {"limits": lim}} for lim in limits]}
    if init is not None:
        spec["initContainers"] = [{"resources": {"requests": init}}]
    return spec


def _pod(name: str, spec: dict[str, Any], node: str | None = "n1") -> dict[str, Any]:
    phase = "Running" if node else "Pending"
    body: dict[str, Any] = {"apiVersion": "v1", "kind": "Pod"}
    body["metadata"] = {"name": name, "namespace": "ns", "creationTimestamp": 10}
    body["spec"] = {**spec, **({"nodeName": node} if node else {})}
    body["status"] = {"phase": phase}
    return body


@pytest.mark.parametrize(
    ("spec", "gpus", "mig"),
    [
        pytest.param(_spec({SMALL: "1"}), 1, {SMALL: 1}, id="one-instance"),
        pytest.param(_spec({SMALL: "1"}, {SMALL: "2"}), 3, {SMALL: 3}, id="containers-add-up"),
        pytest.param(_spec({GPU: "1", BIG: "1"}), 2, {BIG: 1}, id="mixed-gpu-and-mig"),
        pytest.param(_spec({SMALL: "1"}, init={SMALL: "2"}), 2, {SMALL: 2}, id="init-larger"),
        pytest.param(_spec({"cpu": "2"}, init={GPU: "1"}), 1, {}, id="init-whole-gpu"),
    ],
)
def test_pod_requests_per_resource(spec: dict[str, Any], gpus: int, mig: dict[str, int]) -> None:
    view = to_cluster_view(ClusterObjects(pods=[_pod("p", spec)]), 0.0)
    (pod,) = view.pods
    assert (pod.gpus, dict(pod.mig)) == (gpus, mig)
    (job,) = view.jobs  # a bare GPU pod is its own gang
    assert (job.gpus, dict(job.mig)) == (gpus, mig)


def test_pending_bare_pod_asks_for_its_profile() -> None:
    view = to_cluster_view(ClusterObjects(pods=[_pod("p", _spec({SMALL: "1"}), None)]), 0.0)
    (demand,) = view.pending
    assert (demand.job, demand.gpus, dict(demand.mig)) == ("ns/p", 1, {SMALL: 1})


def test_fractional_mig_request_is_a_problem() -> None:
    view = to_cluster_view(ClusterObjects(pods=[_pod("p", _spec({SMALL: "500m"}))]), 0.0)
    assert any(f"{SMALL} must be a whole number" in p for p in view.problems), view.problems


def _node(capacity: dict[str, str], labels: dict[str, str] | None = None) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": "n1", "labels": {"nvidia.com/gpu.count": "2", **(labels or {})}},
        "status": {"capacity": {"cpu": "8", **capacity}},
    }


@pytest.mark.parametrize(
    ("node", "mig"),
    [
        pytest.param(_node({GPU: "2"}), {}, id="whole-gpus"),
        pytest.param(_node({SMALL: "7", BIG: "2"}), {SMALL: 7, BIG: 2}, id="mixed-strategy"),
        pytest.param(
            _node({GPU: "1", SMALL: "3"}, {"nvidia.com/mig.strategy": "mixed"}),
            {GPU: 1, SMALL: 3},
            id="mixed-with-a-whole-gpu-beside",
        ),
        pytest.param(
            _node({GPU: "14"}, {"nvidia.com/mig.strategy": "single"}),
            {GPU: 14},
            id="single-strategy",
        ),
        pytest.param(
            _node({GPU: "2"}, {"nvidia.com/mig.strategy": "mixed"}), {}, id="mixed-label-no-mig"
        ),
    ],
)
def test_mig_enabled_nodes(node: dict[str, Any], mig: dict[str, int]) -> None:
    (decoded,) = to_cluster_view(ClusterObjects(nodes=[node]), 0.0).nodes
    assert dict(decoded.mig) == mig
    assert decoded.gpus == 2


def test_a_node_with_only_mig_resources_is_a_gpu_node() -> None:
    node = _node({SMALL: "7"})
    node["metadata"]["labels"] = {}
    (decoded,) = to_cluster_view(ClusterObjects(nodes=[node]), 0.0).nodes
    assert dict(decoded.mig) == {SMALL: 7}


def _podgroup(min_resources: dict[str, str] | None) -> dict[str, Any]:
    spec: dict[str, Any] = {"minMember": 2, "queue": "q"}
    if min_resources is not None:
        spec["minResources"] = min_resources
    return {
        "apiVersion": "scheduling.volcano.sh/v1beta1",
        "kind": "PodGroup",
        "metadata": {"name": "pg", "namespace": "ns", "creationTimestamp": 10},
        "spec": spec,
        "status": {"phase": "Inqueue"},
    }


def _member(name: str) -> dict[str, Any]:
    pod = _pod(name, _spec({SMALL: "1"}), None)
    pod["metadata"]["annotations"] = {"scheduling.k8s.io/group-name": "pg"}
    return pod


@pytest.mark.parametrize(
    ("min_resources", "gpus", "mig"),
    [
        pytest.param({"cpu": "4", SMALL: "2"}, 2, {SMALL: 2}, id="min-resources"),
        pytest.param({"cpu": "4"}, 2, {SMALL: 2}, id="from-member-pods"),
        pytest.param(None, 2, {SMALL: 2}, id="no-min-resources"),
    ],
)
def test_podgroup_demand_per_resource(
    min_resources: dict[str, str] | None, gpus: int, mig: dict[str, int]
) -> None:
    objs = ClusterObjects(podgroups=[_podgroup(min_resources)], pods=[_member("m0"), _member("m1")])
    (demand,) = to_cluster_view(objs, 0.0).pending
    assert (demand.gpus, dict(demand.mig), demand.min_member) == (gpus, mig, 2)


def test_workload_templates_count_their_instances() -> None:
    """A suspended job's request comes from its templates (its pods are gone): resume reads it."""
    pytorch = {
        "apiVersion": "kubeflow.org/v1",
        "kind": "PyTorchJob",
        "metadata": {"name": "t", "namespace": "ns", "creationTimestamp": 10},
        "spec": {
            "runPolicy": {"suspend": True},
            "pytorchReplicaSpecs": {
                "Master": {"replicas": 1, "template": {"spec": _spec({SMALL: "1"})}},
                "Worker": {"replicas": 3, "template": {"spec": _spec({SMALL: "1"})}},
            },
        },
    }
    (job,) = to_cluster_view(ClusterObjects(workloads=[pytorch]), 0.0).jobs
    assert (job.gpus, dict(job.mig), job.suspended) == (4, {SMALL: 4}, True)
