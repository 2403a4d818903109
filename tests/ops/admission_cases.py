"""Forbidden requests for the admission policy tests, each with the one rule that must deny it.

A case is (id, where, tamper, rule): `where` names one write of a `reclaimer_flows` flow (flow,
index), `tamper` turns it into the forbidden request (mostly: the same patch with one thing
added, as a stolen token would send it), and `rule` is (policy, start of the message) of the
validation meant to deny it.
"""

# One case per line reads as a table; lines longer than the limit are the price.
# ruff: noqa: E501

from __future__ import annotations

import copy
import dataclasses
from collections.abc import Callable
from typing import Any

from admission import Obj, Write, admission_request
from kubewrites import RECLAIMER
from reclaimer_flows import WORKLOAD_FILES

Tamper = Callable[[Write], Write]
Case = tuple[str, tuple[str, int], Tamper, tuple[str, str]]


def edit(change: Callable[[Obj], Any]) -> Tamper:
    """The same write with `change` applied to the object it would store."""

    def tamper(write: Write) -> Write:
        obj = copy.deepcopy(write.object)
        change(obj)
        return dataclasses.replace(write, object=obj)

    return tamper


def first_container(obj: Obj) -> Obj:
    """The first container under spec (a job's replica template, a pod's own containers)."""
    queue: list[Any] = [obj["spec"]]
    while queue:
        node = queue.pop(0)
        if isinstance(node, dict) and "image" in node:
            return node
        queue.extend(
            node.values() if isinstance(node, dict) else node if isinstance(node, list) else []
        )
    raise AssertionError("no container")


def set_image(obj: Obj) -> None:
    first_container(obj)["image"] = "registry.example/miner:latest"


def annotate(key: str, value: str = "mallory") -> Callable[[Obj], None]:
    return lambda obj: obj["metadata"].setdefault("annotations", {}).__setitem__(key, value)


def label(key: str, value: str = "mallory") -> Callable[[Obj], None]:
    return lambda obj: obj["metadata"].setdefault("labels", {}).__setitem__(key, value)


def held_by_someone_else(then: Callable[[Obj], None]) -> Tamper:
    """The workload as Kueue or its owner holds it stopped (no gpu-reclaim.io/ record), with
    `then` applied as a stolen token's patch."""

    def tamper(write: Write) -> Write:
        held = copy.deepcopy(write.object)
        notes = held["metadata"]["annotations"]
        held["metadata"]["annotations"] = {
            k: v for k, v in notes.items() if "gpu-reclaim.io/" not in k
        }
        patched = copy.deepcopy(held)
        then(patched)
        return dataclasses.replace(write, old=held, object=patched)

    return tamper


def unsuspend(obj: Obj) -> None:
    if obj["kind"] == "Notebook":
        del obj["metadata"]["annotations"]["kubeflow-resource-stopped"]
    else:
        spec = obj["spec"].get("runPolicy", obj["spec"])
        spec["suspend"] = False


def claim(obj: Obj) -> None:
    obj["metadata"]["annotations"]["gpu-reclaim.io/suspended-by"] = "mallory"


def request(op: str, resource: str, obj: Obj | None, **kw: Any) -> Tamper:
    """A request the reclaimer never makes (the flow's write is ignored); `resource` is
    group/plural[/subresource] with core as ''."""
    group, plural, sub = [*resource.split("/"), ""][:3]
    old, kind = kw.pop("old", None), kw.pop("kind", "")
    req = admission_request(
        op, group=group, version="v1", resource=plural, kind=kind, sub_resource=sub,
        username=RECLAIMER, **kw,
    )  # fmt: skip
    return lambda _write: Write(req, obj, old)


def as_dry_run(tamper: Tamper) -> Tamper:
    return lambda w: dataclasses.replace(tamper(w), request={**w.request, "dryRun": True})


def as_update(write: Write) -> Write:
    return dataclasses.replace(
        write, request={**write.request, "operation": "UPDATE"}, old=write.object
    )


# where: the reclaimer's stop patch of each kind, and its other writes
STOP = {kind.value: (f"{kind.value}-stop-resume", 0) for kind in WORKLOAD_FILES}
STOP |= {"VolcanoJob": ("VolcanoJob-abort-resume", 0), "Pod": ("Pod-evict", 1)}
RESHAPE = "Node-reshape-and-cleanup"
KEY_WRITE, NODE_NOTE, RELABEL = (RESHAPE, 0), (RESHAPE, 1), (RESHAPE, 2)
COMMAND, EVICTION = ("VolcanoJob-abort-resume", 1), ("Pod-evict", 2)
DEACTIVATE = ("KueueWorkload-deactivate-reactivate", 0)
EVENT, LEASE = ("Event", 0), ("Lease-acquire-renew-release", 0)
POD = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "namespace": "team-a"}}
CONFIGMAP = {
    "apiVersion": "v1",
    "kind": "ConfigMap",
    "metadata": {"name": "coredns", "namespace": "kube-system"},
}

# rules: (policy, start of its message)
NO_SUCH = ("requests", "gpu-reclaimer makes no such request")
LEASE_NAME = ("requests", "gpu-reclaimer may write only its own Lease")
EVENT_SOURCE = ("requests", "an Event from gpu-reclaimer")
EVICT_OPTIONS = ("requests", "an eviction by gpu-reclaimer")
STATUS = ("workloads", "gpu-reclaimer may not change a workload's or pod's status")
METADATA = ("workloads", "gpu-reclaimer may not change a workload's or pod's labels")
ANNOTATION = ("workloads", "gpu-reclaimer may change only gpu-reclaim.io/ annotations")
SPEC = ("workloads", "gpu-reclaimer may change only the suspend field")
RESUME = ("workloads", "gpu-reclaimer may resume only")
CLAIM = ("workloads", "gpu-reclaimer may add gpu-reclaim.io/suspended-by")
KW_STATUS = ("kueue-workloads", "gpu-reclaimer may not change a Workload's status")
KW_METADATA = ("kueue-workloads", "gpu-reclaimer may not change a Workload's labels")
KW_ANNOTATION = (
    "kueue-workloads",
    "gpu-reclaimer may change only gpu-reclaim.io/ annotations of a Workload",
)
KW_SPEC = ("kueue-workloads", "gpu-reclaimer may change only spec.active")
KW_REACTIVATE = ("kueue-workloads", "gpu-reclaimer may reactivate only")
KW_CLAIM = ("kueue-workloads", "gpu-reclaimer may add gpu-reclaim.io/suspended-by to a Workload")
ACTION = ("volcano-commands", "gpu-reclaimer may send only")
TARGET = ("volcano-commands", "a Command from gpu-reclaimer")
CM_NAME = ("device-plugin-config", "gpu-reclaimer may change only the ConfigMap")
CM_FIELDS = ("device-plugin-config", "gpu-reclaimer may change only the data")
CM_METADATA = ("device-plugin-config", "gpu-reclaimer may not change the device-plugin ConfigMap")
CM_KEYS = ("device-plugin-config", "gpu-reclaimer may add, change or remove only")
NODE_SPEC = ("node-labels", "gpu-reclaimer may not change a node's spec")
NODE_METADATA = ("node-labels", "gpu-reclaimer may not change a node's finalizers")
NODE_LABELS = ("node-labels", "gpu-reclaimer may change only the node label")
NODE_LABEL_VALUE = ("node-labels", "gpu-reclaimer may set nvidia.com/device-plugin.config")
NODE_ANNOTATIONS = (
    "node-labels",
    "gpu-reclaimer may change only gpu-reclaim.io/ annotations of a node",
)

PYTORCH = STOP["PyTorchJob"]
OWNER = {"apiVersion": "v1", "kind": "ConfigMap", "name": "x", "uid": "u"}
CASES: list[Case] = [
    *((f"{k}-image", w, edit(set_image), SPEC) for k, w in STOP.items()),
    *((f"{k}-other-annotation", w, edit(annotate("example.com/owner")), ANNOTATION) for k, w in STOP.items()),
    *((f"{k}-label", w, edit(label("team")), METADATA) for k, w in STOP.items()),
    ("PyTorchJob-image-as-dry-run", PYTORCH, as_dry_run(edit(set_image)), SPEC),
    ("PyTorchJob-replicas", PYTORCH, edit(lambda o: o["spec"]["pytorchReplicaSpecs"]["Worker"].update(replicas=16)), SPEC),
    ("TFJob-schedulingPolicy", STOP["TFJob"], edit(lambda o: o["spec"]["runPolicy"]["schedulingPolicy"].update(queue="prod")), SPEC),
    ("BatchJob-parallelism", STOP["BatchJob"], edit(lambda o: o["spec"].update(parallelism=64)), SPEC),
    ("TrainJob-numNodes", STOP["TrainJob"], edit(lambda o: o["spec"]["trainer"].update(numNodes=64)), SPEC),
    ("TrainJob-queue-patch", STOP["TrainJob"], edit(lambda o: o["spec"]["runtimePatches"].append({"manager": "mallory"})), SPEC),
    ("TrainJob-managedBy", STOP["TrainJob"], edit(lambda o: o["spec"].update(managedBy="kueue.x-k8s.io/multikueue")), SPEC),
    ("PyTorchJob-finalizer", PYTORCH, edit(lambda o: o["metadata"].update(finalizers=["example.com/hold"])), METADATA),
    ("PyTorchJob-status", PYTORCH, edit(lambda o: o.update(status={"conditions": []})), STATUS),
    ("PyTorchJob-notebook-stop-annotation", PYTORCH, edit(annotate("kubeflow-resource-stopped")), ANNOTATION),
    *((f"{k}-resume-not-its-own", STOP[k], held_by_someone_else(unsuspend), RESUME) for k in ("PyTorchJob", "BatchJob", "Notebook", "TrainJob")),
    *((f"{k}-claim-without-stopping", STOP[k], held_by_someone_else(claim), CLAIM) for k in ("MPIJob", "RayJob", "Notebook", "TrainJob")),
    ("Workload-status", DEACTIVATE, edit(lambda o: o.update(status={"conditions": []})), KW_STATUS),
    ("Workload-label", DEACTIVATE, edit(label("kueue.x-k8s.io/queue-name", "prod")), KW_METADATA),
    ("Workload-other-annotation", DEACTIVATE, edit(annotate("example.com/owner")), KW_ANNOTATION),
    ("Workload-queueName", DEACTIVATE, edit(lambda o: o["spec"].update(queueName="prod")), KW_SPEC),
    ("Workload-podSets", DEACTIVATE, edit(lambda o: o["spec"]["podSets"][0].update(count=64)), KW_SPEC),
    ("Workload-priority", DEACTIVATE, edit(lambda o: o["spec"].update(priority=1000000)), KW_SPEC),
    ("Workload-reactivate-not-its-own", DEACTIVATE, held_by_someone_else(lambda o: o["spec"].update(active=True)), KW_REACTIVATE),
    ("Workload-claim-without-deactivating", DEACTIVATE, held_by_someone_else(claim), KW_CLAIM),
    ("delete-pod", PYTORCH, request("DELETE", "/pods", None, kind="Pod", namespace="team-a", name="p", old=POD), NO_SUCH),
    ("create-pod", PYTORCH, request("CREATE", "/pods", POD, kind="Pod", namespace="team-a"), NO_SUCH),
    ("update-pod-status", PYTORCH, request("UPDATE", "/pods/status", POD, kind="Pod", namespace="team-a", old=POD), NO_SUCH),
    ("exec-into-pod", PYTORCH, request("CONNECT", "/pods/exec", {"command": ["sh"]}, kind="PodExecOptions", namespace="team-a", name="p"), NO_SUCH),
    ("create-secret", PYTORCH, request("CREATE", "/secrets", {"metadata": {"name": "s"}}, kind="Secret", namespace="team-a"), NO_SUCH),
    ("update-deployment", PYTORCH, request("UPDATE", "apps/deployments", {}, kind="Deployment", namespace="team-a", old={}), NO_SUCH),
    ("update-event", EVENT, as_update, NO_SUCH),
    ("lease-of-another-controller", LEASE, edit(lambda o: o["metadata"].update(name="kube-scheduler")), LEASE_NAME),
    ("event-as-kubelet", EVENT, edit(lambda o: o.update(reportingComponent="kubelet", source={"component": "kubelet"})), EVENT_SOURCE),
    ("eviction-with-no-grace", EVICTION, edit(lambda o: o.update(deleteOptions={"gracePeriodSeconds": 0})), EVICT_OPTIONS),
    ("command-RestartJob", COMMAND, edit(lambda o: o.update(action="RestartJob")), ACTION),
    ("command-TerminateJob", COMMAND, edit(lambda o: o.update(action="TerminateJob")), ACTION),
    ("command-targets-a-PodGroup", COMMAND, edit(lambda o: o["target"].update(apiVersion="scheduling.volcano.sh/v1beta1", kind="PodGroup")), TARGET),
    ("configmap-operator-key-changed", KEY_WRITE, edit(lambda o: o["data"].update({"ts-4": "version: v1\n"})), CM_KEYS),
    ("configmap-operator-key-removed", KEY_WRITE, edit(lambda o: o["data"].pop("whole")), CM_KEYS),
    ("configmap-label", KEY_WRITE, edit(label("team")), CM_METADATA),
    ("configmap-binaryData", KEY_WRITE, edit(lambda o: o.update(binaryData={"gpu-reclaim-x": "AA=="})), CM_FIELDS),
    ("another-configmap", KEY_WRITE, request("UPDATE", "/configmaps", {**CONFIGMAP, "data": {"gpu-reclaim-x": "y"}}, kind="ConfigMap", namespace="kube-system", name="coredns", old=CONFIGMAP), CM_NAME),
    ("node-taint-removed", RELABEL, edit(lambda o: o["spec"].pop("taints")), NODE_SPEC),
    ("node-cordoned", RELABEL, edit(lambda o: o["spec"].update(unschedulable=True)), NODE_SPEC),
    ("node-other-label", RELABEL, edit(label("nvidia.com/mig.config", "all-1g.10gb")), NODE_LABELS),
    ("node-label-to-an-operator-key", RELABEL, edit(label("nvidia.com/device-plugin.config", "ts-4")), NODE_LABEL_VALUE),
    ("node-label-removed", RELABEL, edit(lambda o: o["metadata"]["labels"].pop("nvidia.com/device-plugin.config")), NODE_LABEL_VALUE),
    ("node-other-annotation", NODE_NOTE, edit(annotate("node.alpha.kubernetes.io/ttl", "0")), NODE_ANNOTATIONS),
    ("node-owner-reference", NODE_NOTE, edit(lambda o: o["metadata"].update(ownerReferences=[OWNER])), NODE_METADATA),
]  # fmt: skip
