"""PodDisruptionBudget arithmetic of the fake API server's eviction subresource.

As the disruption controller computes it: pods selected by the budget are expected, Running ones
healthy; `minAvailable` (count or percentage, rounded up) or `maxUnavailable` (rounded down)
decides how many more may go. Pods that are not Running may always be evicted. The store keeps
each budget's `status.disruptionsAllowed` current on every read (`refresh_status`), as the
disruption controller (pkg/controller/disruption) keeps it in a real cluster.
"""

from __future__ import annotations

import math
from typing import Any

from fakeapi.errors import ApiError

Obj = dict[str, Any]


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


def amount(value: Any, total: int, round_up: bool) -> int:
    if isinstance(value, str) and value.endswith("%"):
        exact = int(value[:-1]) * total / 100
        return math.ceil(exact) if round_up else math.floor(exact)
    return int(value)


def allowed(pdb: Obj, namespace_pods: list[Obj]) -> int:
    """`status.disruptionsAllowed` as the disruption controller computes it."""
    selector = pdb["spec"].get("selector")
    pods = [p for p in namespace_pods if selects(selector, p["metadata"].get("labels") or {})]
    expected = len(pods)
    healthy = sum(1 for p in pods if (p.get("status") or {}).get("phase") == "Running")
    spec = pdb["spec"]
    if "minAvailable" in spec:
        allowed = healthy - amount(spec["minAvailable"], expected, round_up=True)
    else:
        allowed = amount(spec.get("maxUnavailable", 1), expected, round_up=False) - (
            expected - healthy
        )
    return max(0, allowed)


def refresh_status(pdb: Obj, namespace_pods: list[Obj]) -> None:
    """Keep a stored budget's status current, as the disruption controller does."""
    status = pdb.setdefault("status", {})
    status["disruptionsAllowed"] = allowed(pdb, namespace_pods)
    status["observedGeneration"] = pdb["metadata"].get("generation", 1)


def check_budget(pdb: Obj, namespace_pods: list[Obj]) -> None:
    """Raise 429 when evicting one more healthy pod would break the budget."""
    if allowed(pdb, namespace_pods) <= 0:
        raise ApiError(
            429,
            "TooManyRequests",
            "Cannot evict pod as it would violate the pod's disruption budget.",
        )
