"""Stop and resume a job Kueue admits the way Kueue supports: its Workload's `spec.active`.

Kueue owns the `suspend` of every job it admits and would undo a write to it within a reconcile.
What it offers an outside controller instead is the Workload's `spec.active` (kubernetes-sigs/kueue
apis/kueue/v1beta2/workload_types.go: "Changing active from true to false will evict any running
workloads"): set to false, Kueue evicts the Workload (`Evicted`, reason `Deactivated`), suspends
the job through its own integration and releases its quota; set back to true, it requeues it.

One merge patch carries `spec.active` and the stop record (`kube.operations.suspend_record`) on the
Workload, under the resourceVersion just read, so the record and the stop never part. Before it:
- the Workload is read again and must still be the one the snapshot joined (same uid), owned by the
  job (same uid), and, to stop it, active and holding quota;
- the job is read again: a `managedBy` naming another controller or a foreign controller owner
  (`kube.objects.management`) refuses the stop, as do the PodDisruptionBudgets of its namespace
  (`operations.check_budgets`);
- a resume needs the reclaimer's own record on the Workload: one that something else deactivated
  (Kueue's `waitForPodsReady` requeue limit, a person, another controller) is never reactivated.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from reclaimer.kube.objects import fields as f
from reclaimer.kube.objects import kinds, kueue, management
from reclaimer.kube.objects import resources as r
from reclaimer.kube.operations import Precondition, check_budgets
from reclaimer.kube.write import KubeWriter
from reclaimer.model import Job, Pod

Obj = dict[str, Any]


def workload_resource(job: Job) -> r.Resource:
    """The Workloads resource in the version the job's Workload was read in."""
    if job.kueue is None:
        raise Precondition(f"{job.key} is not admitted by Kueue")
    version = job.kueue.api_version.rsplit("/", 1)[-1]
    return kueue.workloads(version)


def _check_workload(wl: Obj, job: Job) -> None:
    assert job.kueue is not None
    uid = str(f.meta(wl).get("uid", ""))
    if job.kueue.uid and uid and uid != job.kueue.uid:
        raise Precondition(f"Workload {job.kueue.name} was replaced since the snapshot")
    owner = kueue.owner_key(wl)
    if owner is None or owner[0] != job.key or (owner[1] and job.uid and owner[1] != job.uid):
        raise Precondition(f"Workload {job.kueue.name} no longer belongs to {job.key}")


def _check_job(w: KubeWriter, job: Job) -> None:
    wk = kinds.BY_JOB_KIND.get(job.kind)
    if wk is None:
        raise Precondition(f"{job.key}: a {job.kind} is not a kind Kueue admits here")
    obj = w.get_custom(wk.resource, job.namespace, job.name)
    uid = str(f.meta(obj).get("uid", ""))
    if job.uid and uid and uid != job.uid:
        raise Precondition(f"{job.key} was replaced since the snapshot (uid {uid})")
    why = management.reconciled_elsewhere(obj) or management.foreign_owner(obj)
    if why:
        raise Precondition(f"{job.key}: {why}")


def set_active(
    w: KubeWriter,
    job: Job,
    active: bool,
    record: Mapping[str, str | None],
    pods: Sequence[Pod] = (),
) -> Obj:
    """Deactivate (`active` False) or reactivate the Workload of `job`, with the record in the
    same patch; returns the Workload as read. Raises `Precondition` when the live objects are
    not as the plan assumed."""
    res = workload_resource(job)
    assert job.kueue is not None
    name = job.kueue.name
    wl = w.get_custom(res, job.namespace, name)
    _check_workload(wl, job)
    live = f.dig(wl, "spec", "active")
    is_active = True if live is None else bool(live)
    if is_active == active:
        raise Precondition(f"{job.key}: Workload {name} is already {_state(active)}")
    if active and r.SUSPENDED_BY not in f.annotations_of(wl):
        raise Precondition(f"{job.key}: Workload {name} was not deactivated by the reclaimer")
    if not active:
        if not kueue.condition(wl, kueue.QUOTA_RESERVED):
            raise Precondition(f"{job.key}: Workload {name} holds no quota: nothing to free")
        _check_job(w, job)
        check_budgets(w, job, pods)
    body = {
        "metadata": {
            "resourceVersion": str(wl["metadata"]["resourceVersion"]),
            "annotations": dict(record),
        },
        "spec": {"active": active},
    }
    w.patch_custom(res, job.namespace, name, body)
    return wl


def _state(active: bool) -> str:
    return "active" if active else "deactivated"
