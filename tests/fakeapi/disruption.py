"""PodDisruptionBudget arithmetic of the fake API server, as kube-controller-manager and the
eviction subresource do it.

The disruption controller (kubernetes pkg/controller/disruption/disruption.go, `trySync`):
- the pods are those of the budget's namespace its selector matches;
- expected pods and desired healthy (`getExpectedPodCount`): an integer `minAvailable` is the
  desired count and expects every selected pod; `maxUnavailable` and a percentage `minAvailable`
  expect the sum of the scales of the pods' controllers (`getExpectedScale`, each controller
  counted once, found as `fakeapi.scale` finds it: a ReplicaSet, a Deployment above it, a
  StatefulSet or a ReplicationController by `spec.replicas`, any other kind through its scale
  subresource, e.g. a PyTorchJob's Worker replicas), and scale the value against it rounding up
  (`intstr.GetScaledValueFromIntOrPercent(..., true)`). A pod without a controller adds nothing
  (it is reported as unmanaged); a pod whose controller no finder finds (gone, or another object
  of that name), a kind without a scale subresource (a TFJob) or a scale that cannot be read
  fails the sync, and `failSafe` leaves `disruptionsAllowed` at 0 with the condition
  `DisruptionAllowed` False, reason `SyncFailed`, message the error;
- a pod is healthy when it is not being deleted and is Ready (`countHealthyPods`);
- allowed = healthy - desired, and 0 when that is negative or nothing is expected
  (`updatePdbStatus`).

The eviction subresource (pkg/registry/core/pod/storage/eviction.go, `Create`): a pod that is
Pending, finished or already being deleted is deleted without looking at budgets
(`canIgnorePDB`); more than one budget is a 500; an unready pod goes without spending the budget
when `unhealthyPodEvictionPolicy` is AlwaysAllow or the budget is whole (healthy >= desired > 0);
otherwise `checkAndDecrement` answers 429 while the budget allows no disruption.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

from fakeapi.errors import ApiError
from fakeapi.scale import Found, ScaleError

Obj = dict[str, Any]
# owner reference, namespace -> (uid, scale) of the controller found, None when none is found;
# raises ScaleError where the sync fails (`fakeapi.scale.controller_scale`)
ScaleOf = Callable[[Obj, str], Found]


def selects(selector: Obj | None, labels: dict[str, str]) -> bool:
    """metav1.LabelSelector matching; for policy/v1 budgets (k8s.io/api/policy/v1 types.go,
    PodDisruptionBudgetSpec.Selector) "a null selector selects no pods" and "an empty selector
    will select all pods in the namespace"."""
    if selector is None:
        return False
    for k, v in (selector.get("matchLabels") or {}).items():
        if labels.get(k) != v:
            return False
    for expr in selector.get("matchExpressions") or []:
        key, op, values = expr["key"], expr["operator"], expr.get("values") or []
        ok = {
            "In": labels.get(key) in values,
            "NotIn": labels.get(key) not in values,
            "Exists": key in labels,
            "DoesNotExist": key not in labels,
        }[op]
        if not ok:
            return False
    return True


def scaled(value: Any, total: int) -> int:
    """intstr.GetScaledValueFromIntOrPercent with roundUp=true."""
    if isinstance(value, str) and value.endswith("%"):
        return math.ceil(int(value[:-1]) * total / 100)
    return int(value)


def is_ready(pod: Obj) -> bool:
    """pkg/api/v1/pod IsPodReady: the Ready condition is True."""
    conditions = (pod.get("status") or {}).get("conditions") or []
    return any(c.get("type") == "Ready" and c.get("status") == "True" for c in conditions)


def _being_deleted(pod: Obj) -> bool:
    return bool(pod["metadata"].get("deletionTimestamp"))


def _controller(pod: Obj) -> Obj | None:
    refs = pod["metadata"].get("ownerReferences") or []
    return next((r for r in refs if r.get("controller")), None)


def expected_scale(pods: list[Obj], ns: str, scale_of: ScaleOf) -> int:
    """Sum of the scales of the pods' controllers, each counted once; ownerless pods add 0."""
    scales: dict[str, int] = {}
    for pod in pods:
        ref = _controller(pod)
        if ref is None or str(ref.get("uid")) in scales:
            continue
        found = scale_of(ref, ns)
        if found is None:
            raise ScaleError(f'found no controllers for pod "{pod["metadata"]["name"]}"')
        uid, scale = found
        scales[uid] = scale
    return sum(scales.values())


def budget_status(pdb: Obj, namespace_pods: list[Obj], scale_of: ScaleOf) -> Obj:
    """The status the disruption controller writes for this budget."""
    spec, ns = pdb.get("spec") or {}, pdb["metadata"].get("namespace", "")
    generation = pdb["metadata"].get("generation", 1)
    pods = [
        p
        for p in namespace_pods
        if selects(spec.get("selector"), p["metadata"].get("labels") or {})
    ]
    try:
        if spec.get("maxUnavailable") is not None:
            expected = expected_scale(pods, ns, scale_of)
            desired = max(0, expected - scaled(spec["maxUnavailable"], expected))
        elif isinstance(spec.get("minAvailable"), int):
            expected, desired = len(pods), spec["minAvailable"]
        elif spec.get("minAvailable") is not None:
            expected = expected_scale(pods, ns, scale_of)
            desired = scaled(spec["minAvailable"], expected)
        else:
            expected = desired = 0
    except ScaleError as exc:  # failSafe: nothing allowed, the generation not observed
        old = pdb.get("status") or {}
        condition = {"type": "DisruptionAllowed", "status": "False", "reason": "SyncFailed"}
        return {
            **old,
            "disruptionsAllowed": 0,
            "conditions": [{**condition, "message": str(exc)}],
        }
    healthy = sum(1 for p in pods if not _being_deleted(p) and is_ready(p))
    allowed = healthy - desired
    if expected <= 0 or allowed <= 0:
        allowed = 0
    return {
        "currentHealthy": healthy,
        "desiredHealthy": desired,
        "expectedPods": expected,
        "disruptionsAllowed": allowed,
        "observedGeneration": generation,
        "conditions": [
            {
                "type": "DisruptionAllowed",
                "status": "True" if allowed > 0 else "False",
                "reason": "SufficientPods" if allowed > 0 else "InsufficientPods",
            }
        ],
    }


def can_ignore_budgets(pod: Obj) -> bool:
    """eviction.go canIgnorePDB: Pending or finished pods, and pods already being deleted."""
    phase = (pod.get("status") or {}).get("phase")
    return phase in ("Pending", "Succeeded", "Failed") or _being_deleted(pod)


def check_eviction(pdb: Obj, pod: Obj) -> None:
    """Raise 429 when the budget (with its current status) forbids evicting this pod."""
    status = pdb.get("status") or {}
    policy = (pdb.get("spec") or {}).get("unhealthyPodEvictionPolicy")
    if not is_ready(pod):
        if policy == "AlwaysAllow":
            return
        desired = status.get("desiredHealthy", 0)
        if status.get("currentHealthy", 0) >= desired > 0:
            return
    name = pdb["metadata"]["name"]
    if status.get("observedGeneration", 0) < pdb["metadata"].get("generation", 1):
        raise ApiError(
            429,
            "TooManyRequests",
            "Cannot evict pod as it would violate the pod's disruption budget. "
            f"The disruption budget {name} is still being processed by the server.",
        )
    if status.get("disruptionsAllowed", 0) <= 0:
        raise ApiError(
            429,
            "TooManyRequests",
            "Cannot evict pod as it would violate the pod's disruption budget. "
            f"The disruption budget {name} needs {status.get('desiredHealthy', 0)} healthy "
            f"pods and has {status.get('currentHealthy', 0)} currently",
        )
