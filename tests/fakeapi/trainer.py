"""Kubeflow Trainer v2's TrainJob controller, as far as the reclaimer meets it: `suspend` flows
from a TrainJob down to the JobSet it owns, and a JobSet changed behind its TrainJob's back is set
back.

Built from kubeflow/trainer v2.0.0 through v2.3.0: pkg/controller/trainjob_controller.go
`Reconcile` skips a finished TrainJob (a True `Complete` or `Failed` condition) and, from v2.3.0
only, one whose `spec.managedBy` names another controller (pkg/util/trainjob
`IsManagedByExternalController`, added by kubeflow/trainer#3681); v2.0 to v2.2 reconcile a
TrainJob whatever its `managedBy` says. Otherwise the JobSet plugin's `Build`
(pkg/runtime/framework/plugins/jobset/jobset.go) server-side applies the JobSet named after the
TrainJob, with `Suspend(trainJob.Spec.Suspend)`, whenever the TrainJob or the existing JobSet is
suspended (both running: it leaves the JobSet alone). A TrainJob that leaves `suspend` unset
applies none (a nil pointer is omitted from the apply configuration), so the JobSet keeps the
`suspend` someone else wrote. The controller watches the JobSets it owns, so a write to one
reconciles its TrainJob. Here that reconcile runs right after each write the API accepts (not
after dry-runs), as the controller would soon after. Not modelled: field managers (on a real
cluster, a TrainJob whose `suspend` is removed after the trainer applied one has the field dropped
from its JobSet by the next apply; here the JobSet keeps it), the JobSet's other fields (the tests
never change them), the TrainJob's status conditions, its PodGroup.
"""

from __future__ import annotations

from typing import Any, Protocol

Obj = dict[str, Any]
Res = tuple[str, str, str]
TRAINJOBS: Res = ("trainer.kubeflow.org", "v1alpha1", "trainjobs")
JOBSETS: Res = ("jobset.x-k8s.io", "v1alpha2", "jobsets")
CONTROLLER = "trainer.kubeflow.org/trainjob-controller"
_DONE = frozenset({"Complete", "Failed"})
MANAGED_BY_FROM = (2, 3)  # the first release whose controller honours spec.managedBy


def release(name: str) -> tuple[int, ...]:
    """("v2.3" -> (2, 3)), for comparing releases."""
    return tuple(int(part) for part in name.removeprefix("v").split("."))


class Store(Protocol):
    trainer_release: str

    def get(self, group: str, version: str, plural: str, name: str, ns: str = "") -> Obj | None: ...

    def _store(self, res: Res, obj: Obj) -> Obj: ...


def _controller(obj: Obj) -> Obj | None:
    for ref in obj["metadata"].get("ownerReferences") or []:
        if ref.get("controller"):
            return ref
    return None


def _reconciled(tj: Obj, trainer_release: str) -> bool:
    managed = (tj.get("spec") or {}).get("managedBy")
    if release(trainer_release) >= MANAGED_BY_FROM and managed not in (None, CONTROLLER):
        return False
    conditions = (tj.get("status") or {}).get("conditions") or []
    return not any(c.get("type") in _DONE and c.get("status") == "True" for c in conditions)


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
    if tj is None or js is None or not _reconciled(tj, store.trainer_release):
        return
    ref = _controller(js)
    if ref is None or ref.get("uid") != tj["metadata"].get("uid"):
        return  # not this TrainJob's JobSet: the controller would fail to apply, not take it
    want = (tj.get("spec") or {}).get("suspend")
    if want is None:
        return  # the apply carries no suspend: the JobSet's stays as it is
    spec = js.setdefault("spec", {})
    if bool(want) != bool(spec.get("suspend")):
        spec["suspend"] = bool(want)
        store._store(JOBSETS, js)
