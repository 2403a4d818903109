"""Structural-schema pruning of custom resources, as the API server does it for CRDs.

The API server drops every field a CRD's structural schema does not declare (apiextensions
"pruning", on by default for `apiextensions.k8s.io/v1` CRDs) before storing an object; with
`fieldValidation=Strict` (kube-apiserver >= 1.25) it answers 400 `strict decoding error: unknown
field "..."` instead. This is how a training-operator whose CRD predates `runPolicy.suspend`
(added in v1.7; kubeflow/training-operator pkg/apis/kubeflow.org/v1/common_types.go `RunPolicy`)
would silently drop a suspend patch while the job keeps running, and how one older than v1.9
drops `runPolicy.managedBy` (added in v1.9.0, the same file at that tag; the CRDs of
manifests/base/crds/ declare it from v1.9.0 on, not in v1.8.x).

Only the parts of the training-operator schemas the reclaimer writes are declared field by field
(`spec.runPolicy` and `spec.runPolicy.schedulingPolicy` for every training kind; the whole of
`spec` for PyTorchJob); deeper parts (replica specs, templates, status) are kept whole, as their
schemas accept what the tests store there. Kubeflow Trainer's TrainJob has its `spec` declared
key by key for each release (`TrainJobSpec` in pkg/apis/trainer/v1alpha1/trainjob_types.go at
tags v2.0.0 to v2.3.0; its CRD manifests/base/crds/trainer.kubeflow.org_trainjobs.yaml).
"""

from __future__ import annotations

from typing import Any

from fakeapi.errors import ApiError

Obj = dict[str, Any]
Res = tuple[str, str, str]
PYTORCHJOBS: Res = ("kubeflow.org", "v1", "pytorchjobs")
TRAINING: frozenset[Res] = frozenset(
    {
        PYTORCHJOBS,
        ("kubeflow.org", "v1", "tfjobs"),
        ("kubeflow.org", "v1", "xgboostjobs"),
        ("kubeflow.org", "v1", "paddlejobs"),
        ("kubeflow.org", "v1", "jaxjobs"),
        ("kubeflow.org", "v2beta1", "mpijobs"),
    }
)

# RunPolicy fields by training-operator release (common_types.go at each tag from v1.7; v1.6 took
# RunPolicy from github.com/kubeflow/common, and its CRDs declare no `suspend`)
RUN_POLICY_V16 = frozenset(
    {
        "cleanPodPolicy",
        "ttlSecondsAfterFinished",
        "activeDeadlineSeconds",
        "backoffLimit",
        "schedulingPolicy",
    }
)
RUN_POLICY = {
    "v1.6": RUN_POLICY_V16,
    "v1.7": RUN_POLICY_V16 | {"suspend"},
    "v1.8": RUN_POLICY_V16 | {"suspend"},
    "v1.9": RUN_POLICY_V16 | {"suspend", "managedBy"},
}
SCHEDULING_POLICY = frozenset(
    {"minAvailable", "queue", "minResources", "priorityClass", "scheduleTimeoutSeconds"}
)
TRAINJOBS: Res = ("trainer.kubeflow.org", "v1alpha1", "trainjobs")
_TRAINJOB_V20 = frozenset({"runtimeRef", "initializer", "trainer", "suspend", "managedBy"})
TRAINJOB_SPEC = {
    "v2.0": _TRAINJOB_V20 | {"labels", "annotations", "podSpecOverrides"},
    "v2.1": _TRAINJOB_V20 | {"labels", "annotations", "podTemplateOverrides"},
    "v2.2": _TRAINJOB_V20 | {"runtimePatches", "activeDeadlineSeconds"},
    "v2.3": _TRAINJOB_V20 | {"runtimePatches", "activeDeadlineSeconds"},
}
PYTORCH_SPEC = frozenset({"runPolicy", "elasticPolicy", "pytorchReplicaSpecs", "nprocPerNode"})
TOP = frozenset({"apiVersion", "kind", "metadata", "spec", "status"})


def prune(res: Res, obj: Obj, *, operator: str, strict: bool, trainer: str = "v2.3") -> Obj:
    """`obj` as the API server would store it; 400 under Strict when a field would be dropped."""
    if res not in TRAINING and res != TRAINJOBS:
        return obj
    dropped: list[str] = []
    _keep(obj, TOP, "", dropped)
    spec = obj.get("spec")
    if isinstance(spec, dict) and res == TRAINJOBS:
        _keep(spec, TRAINJOB_SPEC[trainer], "spec", dropped)
    elif isinstance(spec, dict):
        if res == PYTORCHJOBS:
            _keep(spec, PYTORCH_SPEC, "spec", dropped)
        policy = spec.get("runPolicy")
        if isinstance(policy, dict):
            _keep(policy, RUN_POLICY[operator], "spec.runPolicy", dropped)
            sched = policy.get("schedulingPolicy")
            if isinstance(sched, dict):
                _keep(sched, SCHEDULING_POLICY, "spec.runPolicy.schedulingPolicy", dropped)
    if dropped and strict:
        fields = ", ".join(f'unknown field "{d}"' for d in dropped)
        raise ApiError(
            400,
            "BadRequest",
            f"{obj.get('kind', 'object')} cannot be handled: strict decoding error: {fields}",
        )
    return obj


def _keep(node: Obj, known: frozenset[str], path: str, dropped: list[str]) -> None:
    for key in [k for k in node if k not in known]:
        dropped.append(f"{path}.{key}" if path else key)
        del node[key]
