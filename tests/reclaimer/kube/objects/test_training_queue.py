"""The queue of a training job is the one Volcano schedules it by: its PodGroup's, then its
`schedulingPolicy.queue`, then its pod template's Volcano queue annotation, then "default"."""

from __future__ import annotations

from typing import Any

import pytest

from reclaimer.kube.objects.convert import ClusterObjects, to_cluster_view

OWNER = {"apiVersion": "kubeflow.org/v1", "kind": "PyTorchJob", "name": "j", "uid": "u-j"}
OWNER["controller"] = True  # type: ignore[assignment]
QUEUE_KEY = "scheduling.volcano.sh/queue-name"


def _objects(spec_queue: str, template_queue: str, group_queue: str, owned: bool) -> Any:
    template: dict[str, Any] = {"spec": {"containers": [{"name": "c"}]}}
    if template_queue:
        template["metadata"] = {"annotations": {QUEUE_KEY: template_queue}}
    policy = {"schedulingPolicy": {"queue": spec_queue}} if spec_queue else {}
    job = {
        "apiVersion": "kubeflow.org/v1",
        "kind": "PyTorchJob",
        "metadata": {"name": "j", "namespace": "ns", "uid": "u-j"},
        "spec": {
            "runPolicy": policy,
            "pytorchReplicaSpecs": {"Master": {"replicas": 1, "template": template}},
        },
    }
    group_meta: dict[str, Any] = {"name": "j", "namespace": "ns"}
    if owned:
        group_meta["ownerReferences"] = [OWNER]
    group = {
        "apiVersion": "scheduling.volcano.sh/v1beta1",
        "kind": "PodGroup",
        "metadata": group_meta,
        "spec": {"minMember": 1, **({"queue": group_queue} if group_queue else {})},
        "status": {"phase": "Running"},
    }
    pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": "j-master-0",
            "namespace": "ns",
            "annotations": {
                "scheduling.k8s.io/group-name": "j",
                **template.get("metadata", {}).get("annotations", {}),
            },
            "ownerReferences": [OWNER],
        },
        "spec": {"nodeName": "n", "containers": [{"name": "c"}]},
        "status": {"phase": "Running"},
    }
    return ClusterObjects(podgroups=[group], workloads=[job], pods=[pod])


@pytest.mark.parametrize(
    ("spec", "template", "group", "owned", "queue"),
    [
        ("", "", "prod", True, "prod"),
        ("", "", "prod", False, "prod"),
        ("research", "", "prod", True, "prod"),
        ("research", "", "", True, "research"),
        ("", "team-a", "", True, "team-a"),
        ("", "", "", True, "default"),
    ],
    ids=[
        "podgroup-without-spec-queue",
        "podgroup-named-by-the-pods",
        "podgroup-over-spec",
        "spec",
        "template-annotation",
        "default",
    ],
)
def test_the_queue_volcano_schedules_the_job_by(
    spec: str, template: str, group: str, owned: bool, queue: str
) -> None:
    view = to_cluster_view(_objects(spec, template, group, owned), taken_at=0.0)
    (job,) = view.jobs
    assert job.queue == queue, view.problems


def test_a_pending_podgroup_naming_no_queue_waits_in_default() -> None:
    """Nothing names a queue: the training-operator writes "default" into the PodGroup."""
    objs = _objects("", "", "", True)
    group = {**objs.podgroups[0], "status": {"phase": "Pending"}}
    group["spec"] = {**group["spec"], "minResources": {"nvidia.com/gpu": "1"}}
    view = to_cluster_view(ClusterObjects(podgroups=[group], workloads=objs.workloads), 0.0)
    assert [(d.queue, d.job) for d in view.pending] == [("default", "ns/j")]
