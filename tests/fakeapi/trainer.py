"""Kubeflow Trainer v2's TrainJob controller, as far as the reclaimer meets it: `suspend` flows
from a TrainJob down to the JobSet it owns, and a JobSet changed behind its TrainJob's back is set
back.

Built from kubeflow/trainer v2.0.0 through v2.3.0: pkg/controller/trainjob_controller.go
`Reconcile` skips a TrainJob whose `spec.managedBy` names another controller
(pkg/util/trainjob `IsManagedByExternalController`) and a finished one (a True `Complete` or
`Failed` condition); otherwise the JobSet plugin's `Build`
(pkg/runtime/framework/plugins/jobset/jobset.go) server-side applies the JobSet named after the
TrainJob, with `spec.suspend` = the TrainJob's, whenever the TrainJob or the existing JobSet is
suspended (both running: it leaves the JobSet alone). The controller watches the JobSets it owns,
so a write to one reconciles its TrainJob. Here that reconcile runs right after each write the
API accepts (not after dry-runs), as the controller would soon after. Not modelled: the JobSet's
other fields (the tests never change them), the TrainJob's status conditions, its PodGroup.
"""

from __future__ import annotations

from typing import Any, Protocol

Obj = dict[str, Any]
Res = tuple[str, str, str]
TRAINJOBS: Res = ("trainer.kubeflow.org", "v1alpha1", "trainjobs")
JOBSETS: Res = ("jobset.x-k8s.io", "v1alpha2", "jobsets")
CONTROLLER = "trainer.kubeflow.org/trainjob-controller"
_DONE = frozenset({"Complete", "Failed"})


class Store(Protocol):
    def get(self, group: str, version: str, plural: str, name: str, ns: str = "") -> Obj | None: ...

    def _store(self, res: Res, obj: Obj) -> Obj: ...


def _controller(obj: Obj) -> Obj | None:
    for ref in obj["metadata"].get("ownerReferences") or []:
        if ref.get("controller"):
            return ref
    return None


def _reconciled(tj: Obj) -> bool:
    managed = (tj.get("spec") or {}).get("managedBy")
    conditions = (tj.get("status") or {}).get("conditions") or []
    done = any(c.get("type") in _DONE and c.get("status") == "True" for c in conditions)
    return (managed in (None, CONTROLLER)) and not done


def reconcile(store: Store, res: Res, ns: str, name: str) -> None:
    """After a write to `res` ns/name: bring the JobSet of the TrainJob concerned in line."""
    if res == JOBSETS:
        js = store.get(*JOBSETS, name, ns)
        ref = _controller(js) if js is not None else None
        if ref is None or ref.get("kind") != "TrainJob":
            return
        name = str(ref.get("name"))
    elif res != TRAINJOBS:
        return
    tj = store.get(*TRAINJOBS, name, ns)
    js = store.get(*JOBSETS, name, ns)
    if tj is None or js is None or not _reconciled(tj):
        return
    ref = _controller(js)
    if ref is None or ref.get("uid") != tj["metadata"].get("uid"):
        return  # not this TrainJob's JobSet: the controller would fail to apply, not take it
    want = bool((tj.get("spec") or {}).get("suspend"))
    spec = js.setdefault("spec", {})
    if want != bool(spec.get("suspend")):
        spec["suspend"] = want
        store._store(JOBSETS, js)
