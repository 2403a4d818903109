"""kube-controller-manager's resourceclaim controller, and the scheduler's DRA binding, run when a
test says so.

Built from kubernetes/kubernetes pkg/controller/resourceclaim/controller.go (`syncPod`,
`handleClaim`, `syncClaim`, `owningPod`, `isPodDone`) and its controller_test.go cases
("clear-reserved-structured": a claim no pod reserves loses its allocation):
- For each pod that is not done, each `spec.resourceClaims[]` entry with a
  `resourceClaimTemplateName` and no claim yet gets one: created from the template's
  `spec.spec` with `generateName` `<pod>-<pod claim name>-`, owned by the pod
  (`ownerReferences` with `controller: true`), annotated `resource.kubernetes.io/pod-claim-name`,
  and named in the pod's `status.resourceClaimStatuses[]`.
- Each claim's `status.reservedFor` loses the pods that are gone (not found, or another UID) or
  done (`isPodDone`: a terminal phase, or deleted while bound to no node). A claim allocated by
  the scheduler (structured parameters) that no pod reserves any more has its allocation cleared.
- A claim no pod reserves whose owning pod is done is deleted; one whose owning pod is gone is
  deleted too, here at once, where the garbage collector does it on a real cluster.

The scheduler's DRA plugin (pkg/scheduler/framework/plugins/dynamicresources) allocates a pod's
claims and reserves them for it before binding; `bind` plays that, with the devices a test picks.

Each call holds the store's lock for its whole pass and returns the steps it took, in order.
"""

from __future__ import annotations

import copy
from typing import Any

from fakeapi.lifecycle import PODS
from fakeapi.store import FakeCluster

Obj = dict[str, Any]
GROUP = "resource.k8s.io"
CLAIMS = (GROUP, "v1", "resourceclaims")
TEMPLATES = (GROUP, "v1", "resourceclaimtemplates")
POD_CLAIM_NAME = "resource.kubernetes.io/pod-claim-name"
_TERMINAL = frozenset({"Succeeded", "Failed"})


def reconcile(cluster: FakeCluster) -> list[str]:
    """One pass: claims made for pods that need them, then every claim synced."""
    with cluster.lock:
        steps: list[str] = []
        for pod in sorted(cluster.all(*PODS), key=_key):
            if not _done(pod):
                steps += _make_claims(cluster, pod)
        for claim in sorted(cluster.all(*CLAIMS), key=_key):
            steps += _sync_claim(cluster, claim)
        return steps


def bind(cluster: FakeCluster, ns: str, pod_name: str, node: str, devices: list[str]) -> None:
    """As the scheduler does: allocate the pod's claims (in order) to `devices` of the node's
    pool of NVIDIA's driver, reserve them for the pod, then bind and start it."""
    with cluster.lock:
        pod = cluster.get(*PODS, pod_name, ns)
        assert pod is not None, f"no pod {ns}/{pod_name}"
        free = list(devices)
        for name in _claim_names(pod):
            claim = cluster.get(*CLAIMS, name, ns)
            assert claim is not None, f"claim {ns}/{name} not made yet: reconcile first"
            requests = claim["spec"]["devices"]["requests"]
            results = []
            for req in requests:
                for _ in range(int(req["exactly"].get("count", 1))):
                    device = free.pop(0)
                    results.append(
                        {
                            "request": req["name"],
                            "driver": "gpu.nvidia.com",
                            "pool": node,
                            "device": device,
                        }
                    )
            status = claim.setdefault("status", {})
            status["allocation"] = {"devices": {"results": results}}
            ref = {"resource": "pods", "name": pod_name, "uid": pod["metadata"]["uid"]}
            status["reservedFor"] = [*status.get("reservedFor", []), ref]
            cluster._store(CLAIMS, claim)
        pod["spec"]["nodeName"] = node
        pod.setdefault("status", {})["phase"] = "Running"
        cluster._store(PODS, pod)


def _key(obj: Obj) -> tuple[str, str]:
    return obj["metadata"].get("namespace", ""), obj["metadata"]["name"]


def _done(pod: Obj) -> bool:
    """`isPodDone`: it never runs again."""
    phase = (pod.get("status") or {}).get("phase")
    deleted = pod["metadata"].get("deletionTimestamp") and not pod["spec"].get("nodeName")
    return phase in _TERMINAL or bool(deleted)


def _claim_names(pod: Obj) -> list[str]:
    made = {
        s["name"]: s.get("resourceClaimName")
        for s in (pod.get("status") or {}).get("resourceClaimStatuses") or []
    }
    out = []
    for ref in pod["spec"].get("resourceClaims") or []:
        name = ref.get("resourceClaimName") or made.get(ref["name"])
        if name:
            out.append(str(name))
    return out


def _make_claims(cluster: FakeCluster, pod: Obj) -> list[str]:
    ns, name = _key(pod)
    status = pod.setdefault("status", {})
    made = {s["name"] for s in status.get("resourceClaimStatuses") or []}
    steps = []
    for ref in pod["spec"].get("resourceClaims") or []:
        template_name = ref.get("resourceClaimTemplateName")
        if not template_name or ref["name"] in made:
            continue
        template = cluster.get(*TEMPLATES, template_name, ns)
        if template is None:
            continue  # the real controller retries with an error Event until it exists
        body = {
            "apiVersion": f"{GROUP}/v1",
            "kind": "ResourceClaim",
            "metadata": {
                "generateName": f"{name}-{ref['name']}-",
                "annotations": {POD_CLAIM_NAME: ref["name"]},
                "ownerReferences": [
                    {
                        "apiVersion": "v1",
                        "kind": "Pod",
                        "name": name,
                        "uid": pod["metadata"]["uid"],
                        "controller": True,
                        "blockOwnerDeletion": True,
                    }
                ],
            },
            "spec": copy.deepcopy(template["spec"]["spec"]),
        }
        claim = cluster.create(CLAIMS, ns, body, dry=False)
        status.setdefault("resourceClaimStatuses", []).append(
            {"name": ref["name"], "resourceClaimName": claim["metadata"]["name"]}
        )
        cluster._store(PODS, pod)
        steps.append(f"created claim {ns}/{claim['metadata']['name']} for pod {name}")
    return steps


def _owner(claim: Obj) -> Obj | None:
    for ref in claim["metadata"].get("ownerReferences") or []:
        if ref.get("controller") and ref.get("apiVersion") == "v1" and ref.get("kind") == "Pod":
            return dict(ref)
    return None


def _live(cluster: FakeCluster, ns: str, ref: Obj) -> Obj | None:
    pod = cluster.get(*PODS, str(ref.get("name")), ns)
    return pod if pod is not None and pod["metadata"]["uid"] == ref.get("uid") else None


def _sync_claim(cluster: FakeCluster, claim: Obj) -> list[str]:
    ns, name = _key(claim)
    status = claim.setdefault("status", {})
    steps = []
    reserved = status.get("reservedFor") or []
    valid = []
    for ref in reserved:
        pod = _live(cluster, ns, ref)
        if pod is not None and not _done(pod):
            valid.append(ref)
    if len(valid) != len(reserved) or (not valid and status.get("allocation")):
        status["reservedFor"] = valid
        if not valid and status.pop("allocation", None) is not None:
            steps.append(f"deallocated claim {ns}/{name}")
        cluster._store(CLAIMS, claim)
    owner = _owner(claim)
    if not valid and owner is not None:
        pod = _live(cluster, ns, owner)
        if pod is None or _done(pod):
            cluster.delete(CLAIMS, ns, name, dry=False)
            steps.append(f"deleted claim {ns}/{name}")
    return steps
