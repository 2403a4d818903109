"""PodDisruptionBudgets against whole jobs, with the API server's label-selector semantics. Pure.

`kubectl drain` and the Eviction API refuse to take a pod when its budget allows no more
disruptions; stopping a whole job (suspend, AbortJob) takes every one of its pods at once, so the
reclaimer applies the same rule to the job: a budget that selects `n` of the job's healthy
(Running) pods must allow at least `n` disruptions (`status.disruptionsAllowed`, computed by the
disruption controller). A budget the controller has not processed yet (no status, or
`observedGeneration` behind `generation`) allows none, as the Eviction API then answers 429.

Selectors follow `metav1.LabelSelector` (apimachinery `LabelSelectorAsSelector`): every
`matchLabels` pair and every `matchExpressions` requirement must hold (`In`, `NotIn` (true when
the key is absent), `Exists`, `DoesNotExist`); in `policy/v1` an empty selector `{}` selects every
pod of the budget's namespace and a null selector none. An unknown operator selects nothing
(the API server would have rejected it).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from reclaimer.kube.objects import fields as f
from reclaimer.model import Pod, PodPhase

Obj = Mapping[str, Any]


def selects(selector: object, labels: Mapping[str, str]) -> bool:
    """Whether a `LabelSelector` (None: nothing; {}: everything) matches `labels`."""
    if not isinstance(selector, Mapping):
        return False
    for key, value in (selector.get("matchLabels") or {}).items():
        if labels.get(str(key)) != str(value):
            return False
    return all(_requirement(e, labels) for e in selector.get("matchExpressions") or [])


def _requirement(expr: object, labels: Mapping[str, str]) -> bool:
    if not isinstance(expr, Mapping):
        return False
    key, op = str(expr.get("key", "")), expr.get("operator")
    values = [str(v) for v in expr.get("values") or []]
    if op == "In":
        return key in labels and labels[key] in values
    if op == "NotIn":
        return key not in labels or labels[key] not in values
    if op == "Exists":
        return key in labels
    if op == "DoesNotExist":
        return key not in labels
    return False


def disruptions_allowed(pdb: Obj) -> int:
    """What the disruption controller allows now; 0 until it has processed the budget."""
    status = pdb.get("status")
    if not isinstance(status, Mapping) or "disruptionsAllowed" not in status:
        return 0
    observed = status.get("observedGeneration")
    generation = f.meta(pdb).get("generation")
    if isinstance(observed, int) and isinstance(generation, int) and observed < generation:
        return 0
    return max(0, f.int_field(status.get("disruptionsAllowed"), 0))


def blocking_budget(job_key: str, pods: Iterable[Pod], pdbs: Iterable[Obj]) -> str:
    """Why a budget forbids stopping the job with these pods; empty when none does."""
    healthy = [p for p in pods if p.phase is PodPhase.RUNNING and not p.releasing]
    if not healthy:
        return ""
    namespace = healthy[0].namespace
    for pdb in pdbs:
        if f.namespace(pdb) != namespace:
            continue
        selector = f.dig(pdb, "spec", "selector")
        hit = sum(1 for p in healthy if selects(selector, p.labels))
        allowed = disruptions_allowed(pdb)
        if hit > allowed:
            return (
                f"PodDisruptionBudget {namespace}/{f.name(pdb)} allows {allowed} disruption(s); "
                f"stopping {job_key} would disrupt {hit} pod(s) it selects"
            )
    return ""
