"""Who else controls a workload, read from its own object. Pure; consumed by `kube.gangs` (each
gang's `managed_by` and `controlled_by`) and by `kube.operations` (checked again on the live
object just before a stop).

A stop holds only while nobody undoes it. Three things undo it:
- Kueue admits a job labelled `kueue.x-k8s.io/queue-name`: it keeps it suspended until it admits
  it and unsuspends what it admitted, within a reconcile. Such a job is stopped only through its
  Workload (`kube.objects.kueue`), once that is found; until then it is left alone.
- A kind's `managedBy` field (`kinds.WorkloadKind.managed_by`: `spec.runPolicy.managedBy` of
  the training kinds, `spec.managedBy` of batch Job, JobSet, RayJob and TrainJob) naming anyone
  but the kind's own controller (`kinds.WorkloadKind.controller`): that controller then skips the
  object, and whoever reconciles it instead (MultiKueue, a custom controller) is not known to
  honour a stop.
- A controller `ownerReference` of a kind the reclaimer does not manage: such an owner rebuilds
  its child from its own spec, as Kubeflow Trainer's TrainJob re-applies its JobSet's `suspend`
  (trainer pkg/runtime/framework/plugins/jobset/jobset.go `Build`, v2.0.0 through v2.3.0), so a
  stop of the child is undone or fought over. The owners walk (`kube.owners`) already stops the
  topmost kind the reclaimer manages; what is left here is a known kind under an unknown owner.
  One owner is known not to touch its children's spec: a CronJob only creates Jobs from its
  `jobTemplate` and deletes finished ones past its history limits (Kubernetes
  pkg/controller/cronjob/cronjob_controllerv2.go), so a CronJob's Job is stopped by itself.
"""

from __future__ import annotations

from typing import Final

from reclaimer.kube.objects import fields as f
from reclaimer.kube.objects import kinds
from reclaimer.kube.objects.resources import KUEUE_QUEUE_LABEL

Obj = f.Obj
# owners (group, kind) that create their children and never rewrite their spec
HANDS_OFF_OWNERS: Final = frozenset({("batch", "CronJob")})


def _group(api_version: str) -> str:
    return api_version.rsplit("/", 1)[0] if "/" in api_version else ""


def managed_elsewhere(obj: Obj) -> str:
    """Who else admits or reconciles this workload, in words; empty when nobody does."""
    queue = f.labels_of(obj).get(KUEUE_QUEUE_LABEL)
    if queue:
        return f"Kueue admits it ({KUEUE_QUEUE_LABEL}={queue}): it would unsuspend it at once"
    return reconciled_elsewhere(obj)


def reconciled_elsewhere(obj: Obj) -> str:
    """Whom a kind's `managedBy` field hands this workload to, in words; empty when its own
    controller reconciles it. A job Kueue admits through a Workload the reclaimer found is
    stopped through that Workload (`kube.objects.kueue`): only this is left to check on it."""
    wk = kinds.of_owner(str(obj.get("apiVersion", "")), str(obj.get("kind", "")))
    if wk is None or not wk.managed_by:
        return ""
    manager = f.dig(obj, *wk.managed_by)
    if manager and manager != wk.controller:
        field = ".".join(wk.managed_by[1:])
        return (
            f"{field} is {manager}, not {wk.controller} (the {wk.resource.kind} controller): "
            f"{manager} reconciles it instead"
        )
    return ""


def foreign_owner(obj: Obj) -> str:
    """Why this workload's controller owner would undo a stop, naming the owner; empty when it
    has none, or one the reclaimer manages (then the owner is the gang), or a hands-off one."""
    ref = f.controller_owner(obj)
    if ref is None:
        return ""
    api, kind = str(ref.get("apiVersion", "")), str(ref.get("kind", ""))
    if kinds.of_owner(api, kind) is not None or (_group(api), kind) in HANDS_OFF_OWNERS:
        return ""
    owner = f"{kind} {f.namespace(obj)}/{ref.get('name')} ({api})"
    return (
        f"its controller owner is {owner}, a kind the reclaimer does not manage: it would "
        f"undo or fight a stop of its {obj.get('kind', 'workload')}"
    )
