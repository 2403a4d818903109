"""The scale subresource of the custom resources that declare one, and the scale of a pod's
controller as kube-controller-manager's disruption controller finds it.

Served as apiextensions-apiserver serves it (kubernetes
staging/src/k8s.io/apiextensions-apiserver/pkg/registry/customresource/etcd.go, `ScaleREST.Get`
and `scaleFromCustomResource`): GET .../NAME/scale answers an `autoscaling/v1` Scale with the
object's name, namespace, uid, resourceVersion and creationTimestamp, `spec.replicas` read at the
CRD's `specReplicasPath`, `status.replicas` at its `statusReplicasPath` (0 when absent) and
`status.selector` at its `labelSelectorPath` ("" when absent). An object with nothing at
`specReplicasPath` answers 500 `the spec replicas field "..." does not exist`; a resource whose
CRD declares no scale has no such subresource (404, whether the object exists or not).

Declared by kubeflow/training-operator (`+kubebuilder:subresource:scale` in
pkg/apis/kubeflow.org/v1/pytorch_types.go and paddlepaddle_types.go at v1.6.0 through v1.9.0,
jax_types.go from v1.9.0, the release that brought JAXJob; `subresources.scale` of
manifests/base/crds/kubeflow.org_{pytorchjobs,paddlejobs,jaxjobs}.yaml): the Worker replica
spec's `replicas`. TFJob and XGBoostJob (the same files), TrainJob (kubeflow/trainer
manifests/base/crds/trainer.kubeflow.org_trainjobs.yaml), JobSet (kubernetes-sigs/jobset
api/jobset/v1alpha2/jobset_types.go) and RayCluster (ray-project/kuberay
ray-operator/apis/ray/v1/raycluster_types.go) declare none; neither, here, do the other custom
resources served.

The disruption controller (kubernetes pkg/controller/disruption/disruption.go) tries its
`finders` in turn on a pod's controller reference: a ReplicationController, a ReplicaSet's
Deployment, a ReplicaSet no Deployment controls and a StatefulSet by `spec.replicas` (each only
when the object of that name has the reference's uid), then any kind through its scale
subresource (`getScaleController`): a kind the API does not serve fails the sync, as does one
without a scale subresource (`<plural>.<group> does not implement the scale subresource`) or a
scale read that fails (the 500 above); an object that is gone, or has another uid, is found by
no finder. A finder answers the controller it found with its scale: two ReplicaSets of one
Deployment count the Deployment once.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NamedTuple, Protocol

from fakeapi.errors import ApiError

Obj = dict[str, Any]
Res = tuple[str, str, str]
Found = tuple[str, int] | None  # (uid of the controller found, its scale), or none found
APPS = ("apps", "extensions")  # the groups the disruption controller's finders accept
RCS: Res = ("", "v1", "replicationcontrollers")
REPLICASETS: Res = ("apps", "v1", "replicasets")
DEPLOYMENTS: Res = ("apps", "v1", "deployments")
STATEFULSETS: Res = ("apps", "v1", "statefulsets")
BUILT_IN = frozenset({RCS, REPLICASETS, DEPLOYMENTS, STATEFULSETS})  # all serve /scale


class ScalePaths(NamedTuple):
    """A CRD's `subresources.scale`."""

    spec_replicas: str
    status_replicas: str
    label_selector: str


def _worker(replica_specs: str) -> ScalePaths:
    return ScalePaths(
        f".spec.{replica_specs}.Worker.replicas",
        ".status.replicaStatuses.Worker.active",
        ".status.replicaStatuses.Worker.selector",
    )


CUSTOM: dict[Res, ScalePaths] = {
    ("kubeflow.org", "v1", "pytorchjobs"): _worker("pytorchReplicaSpecs"),
    ("kubeflow.org", "v1", "paddlejobs"): _worker("paddleReplicaSpecs"),
    ("kubeflow.org", "v1", "jaxjobs"): _worker("jaxReplicaSpecs"),
}


class ScaleError(Exception):
    """The controller's scale cannot be had: the sync fails and the budget allows nothing."""


class Cluster(Protocol):
    objects: dict[Res, dict[tuple[str, str], Obj]]

    def resource_of(self, obj: Obj) -> Res: ...

    def check_served(self, group: str, version: str, plural: str) -> tuple[str, bool]: ...


def _at(obj: Obj, path: str) -> Any:
    node: Any = obj
    for key in path.removeprefix(".").split("."):
        if not isinstance(node, dict) or key not in node:
            return None
        node = node[key]
    return node


def _count(obj: Obj, path: str) -> int | None:
    value = _at(obj, path)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int):
        raise ApiError(500, "InternalError", f"{path} accessor error: {value!r} is not an int64")
    return value


def custom_scale(res: Res, obj: Obj) -> Obj:
    """The answer to GET .../NAME/scale for a custom resource whose CRD declares a scale."""
    paths = CUSTOM[res]
    replicas = _count(obj, paths.spec_replicas)
    if replicas is None:
        message = f'Internal error occurred: the spec replicas field "{paths.spec_replicas}" '
        raise ApiError(500, "InternalError", message + "does not exist")
    meta = obj["metadata"]
    selector = _at(obj, paths.label_selector)
    return {
        "kind": "Scale",
        "apiVersion": "autoscaling/v1",
        "metadata": {
            k: meta[k]
            for k in ("name", "namespace", "uid", "resourceVersion", "creationTimestamp")
            if k in meta
        },
        "spec": {"replicas": replicas},
        "status": {
            "replicas": _count(obj, paths.status_replicas) or 0,
            "selector": selector if isinstance(selector, str) else "",
        },
    }


def _group(ref: Obj) -> str:
    api = str(ref.get("apiVersion", ""))
    return api.rsplit("/", 1)[0] if "/" in api else ""


def _named(cluster: Cluster, res: Res, ns: str, ref: Obj) -> Obj | None:
    """The object the reference names, if it is that object (same uid)."""
    obj = cluster.objects.get(res, {}).get((ns, str(ref.get("name"))))
    return obj if obj is not None and obj["metadata"].get("uid") == ref.get("uid") else None


def _replicas(obj: Obj) -> tuple[str, int]:
    replicas = (obj.get("spec") or {}).get("replicas")  # defaulted to 1 by the API server
    return str(obj["metadata"]["uid"]), 1 if replicas is None else int(replicas)


def _controller_of(obj: Obj) -> Obj | None:
    refs = obj["metadata"].get("ownerReferences") or []
    return next((r for r in refs if r.get("controller")), None)


def _typed(
    cluster: Cluster, ref: Obj, ns: str, kind: str, res: Res, groups: tuple[str, ...]
) -> Obj | None:
    if ref.get("kind") != kind or _group(ref) not in groups:
        return None
    return _named(cluster, res, ns, ref)


def _replication_controller(cluster: Cluster, ref: Obj, ns: str) -> Found:
    rc = _typed(cluster, ref, ns, "ReplicationController", RCS, ("",))
    return None if rc is None else _replicas(rc)


def _deployment(cluster: Cluster, ref: Obj, ns: str) -> Found:
    rs = _typed(cluster, ref, ns, "ReplicaSet", REPLICASETS, APPS)
    above = None if rs is None else _controller_of(rs)
    if above is None:
        return None
    deployment = _typed(cluster, above, ns, "Deployment", DEPLOYMENTS, APPS)
    return None if deployment is None else _replicas(deployment)


def _replica_set(cluster: Cluster, ref: Obj, ns: str) -> Found:
    rs = _typed(cluster, ref, ns, "ReplicaSet", REPLICASETS, APPS)
    above = None if rs is None else _controller_of(rs)
    if rs is None or (above is not None and above.get("kind") == "Deployment"):
        return None
    return _replicas(rs)


def _stateful_set(cluster: Cluster, ref: Obj, ns: str) -> Found:
    sts = _typed(cluster, ref, ns, "StatefulSet", STATEFULSETS, APPS)
    return None if sts is None else _replicas(sts)


def _scale_subresource(cluster: Cluster, ref: Obj, ns: str) -> Found:
    """`getScaleController`: GET the reference's /scale, as the scale client would."""
    api, kind = str(ref.get("apiVersion", "")), str(ref.get("kind"))
    try:
        res = cluster.resource_of({"apiVersion": api, "kind": kind})
        cluster.check_served(*res)
    except (ValueError, ApiError) as exc:
        raise ScaleError(f'no matches for kind "{kind}" in version "{api}"') from exc
    if res not in BUILT_IN and res not in CUSTOM:
        resource = f"{res[2]}.{res[0]}" if res[0] else res[2]
        raise ScaleError(f"{resource} does not implement the scale subresource")
    obj = _named(cluster, res, ns, ref)
    if obj is None:
        return None
    if res in BUILT_IN:
        return _replicas(obj)
    try:
        scale = custom_scale(res, obj)
    except ApiError as exc:
        raise ScaleError(exc.message) from exc
    return str(scale["metadata"]["uid"]), int(scale["spec"]["replicas"])


FINDERS: tuple[Callable[[Cluster, Obj, str], Found], ...] = (
    _replication_controller,
    _deployment,
    _replica_set,
    _stateful_set,
    _scale_subresource,
)


def controller_scale(cluster: Cluster, ref: Obj, ns: str) -> Found:
    """The first finder's answer for the pod's controller reference `ref`; None when none finds
    it. Raises ScaleError where the real finder fails the sync."""
    for finder in FINDERS:
        found = finder(cluster, ref, ns)
        if found is not None:
            return found
    return None
