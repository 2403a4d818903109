"""Kueue's view of the cluster, from its objects: ClusterQueues, LocalQueues and Workloads. Pure.

Kueue (kubernetes-sigs/kueue) admits a job through a `Workload` it creates for it, owned by the
job (controller ownerReference) in the job's namespace. Fields read, as declared in
apis/kueue/v1beta1 and v1beta2 `workload_types.go`, `clusterqueue_types.go` and
`localqueue_types.go` (both versions served since Kueue 0.15; v1beta1 before):
- Workload `spec.active` (default true: false evicts it and keeps it out of the queue),
  `spec.queueName` (its LocalQueue), `spec.priority`, `spec.podSets[]` (`count` pods of
  `template`), `status.admission.clusterQueue`, and `status.conditions` `QuotaReserved` (holds
  quota in a ClusterQueue), `Admitted`, `Finished` and `Requeued`.
- LocalQueue `spec.clusterQueue` (namespaced: a Workload's queue is in its own namespace).
- ClusterQueue `spec.resourceGroups[].flavors[].resources[]` (`name`, `nominalQuota`,
  `borrowingLimit`), its cohort (`spec.cohort` in v1beta1, `spec.cohortName` in v1beta2) and
  `spec.stopPolicy` (Hold and HoldAndDrain stop admission).

A ClusterQueue becomes a `Queue` whose deserved and guaranteed GPUs are its nominal quota (what
Kueue lets it hold without borrowing) and whose capability is nominal plus its borrowing limit
(no limit in a cohort: none). A running job whose Workload Kueue admitted is joined to it
(`admitted_job`): its queue is the ClusterQueue, its priority the Workload's, it counts as stopped
while the Workload is inactive, and its stop record is the one on the Workload, which is where
the reclaimer writes it. Pending demand is each active, unfinished Workload that holds no quota,
in the ClusterQueue its LocalQueue names, for the job that owns it; and each admitted one whose
job's pods are not all bound to nodes yet, for the devices those pods wait for
(`kube.objects.kueue_demand`).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from typing import Final

from reclaimer.kube.objects import fields as f
from reclaimer.kube.objects import management
from reclaimer.kube.objects.resources import (
    EVICTED_AT,
    PREFIX,
    ROOM_FOR,
    SUSPEND_REASON,
    SUSPENDED_AT,
    SUSPENDED_BY,
    Resource,
)
from reclaimer.model import Job, KueueWorkload, PendingDemand, Queue, QueueState

Obj = f.Obj
GROUP: Final = "kueue.x-k8s.io"
VERSIONS: Final = ("v1beta2", "v1beta1")  # newest first: the reader lists the first served
QUOTA_RESERVED: Final = "QuotaReserved"
FINISHED: Final = "Finished"
REQUEUED: Final = "Requeued"
BAD = (f.FieldError, AttributeError, TypeError)  # a malformed object: skipped, with a problem
_STOPPED = frozenset({"Hold", "HoldAndDrain"})  # ClusterQueue stopPolicy values that stop it


def workloads(version: str = VERSIONS[0]) -> Resource:
    return Resource(GROUP, version, "workloads", "Workload")


def local_queues(version: str = VERSIONS[0]) -> Resource:
    return Resource(GROUP, version, "localqueues", "LocalQueue")


def cluster_queues(version: str = VERSIONS[0]) -> Resource:
    return Resource(GROUP, version, "clusterqueues", "ClusterQueue", namespaced=False)


def condition(obj: Obj, kind: str) -> bool:
    """Whether `obj` has a True condition of type `kind`."""
    items = f.dig(obj, "status", "conditions")
    return any(
        isinstance(c, dict) and c.get("type") == kind and c.get("status") == "True"
        for c in (items if isinstance(items, list) else [])
    )


def _quota(cq: Obj) -> tuple[float, float | None]:
    """(nominal GPUs, borrowing limit in GPUs; None when some GPU quota may borrow unbounded)."""
    nominal, limit, bounded = 0.0, 0.0, True
    for group in f.dig(cq, "spec", "resourceGroups") or []:
        for flavor in (group or {}).get("flavors") or []:
            for res in (flavor or {}).get("resources") or []:
                name = str((res or {}).get("name", ""))
                got = f.device_amounts({name: res.get("nominalQuota", "0")})
                if not got:
                    continue
                nominal += sum(got.values())
                if res.get("borrowingLimit") is None:
                    bounded = False
                else:
                    limit += sum(f.device_amounts({name: res["borrowingLimit"]}).values())
    return nominal, limit if bounded else None


def cohort(cq: Obj) -> str:
    spec = cq.get("spec") or {}
    return str(spec.get("cohortName") or spec.get("cohort") or "")


def cluster_queue(cq: Obj) -> Queue:
    """A ClusterQueue as a queue: nominal GPUs deserved and guaranteed (the policy's `kueue`
    section may release the guarantee), nominal plus borrowing limit its capability."""
    nominal, borrow = _quota(cq)
    group = cohort(cq)
    capability = nominal if not group else (None if borrow is None else nominal + borrow)
    stop = str(f.dig(cq, "spec", "stopPolicy") or "None")
    return Queue(
        name=f.name(cq),
        weight=1,
        deserved_gpus=nominal,
        guarantee_gpus=nominal,
        capability_gpus=capability,
        reclaimable=True,
        state=QueueState.CLOSED if stop in _STOPPED else QueueState.OPEN,
        cluster_queue=True,
        cohort=group,
    )


def queue_targets(lqs: Sequence[Obj]) -> dict[str, str]:
    """LocalQueue "namespace/name" -> the ClusterQueue it submits to."""
    return {f.key(lq): str(f.dig(lq, "spec", "clusterQueue") or "") for lq in lqs}


def _cluster_queue_of(wl: Obj, targets: Mapping[str, str]) -> str:
    admitted = f.dig(wl, "status", "admission", "clusterQueue")
    if admitted and condition(wl, QUOTA_RESERVED):
        return str(admitted)
    return targets.get(f"{f.namespace(wl)}/{f.dig(wl, 'spec', 'queueName') or ''}", "")


def facts(wl: Obj, targets: Mapping[str, str]) -> KueueWorkload:
    active = f.dig(wl, "spec", "active")
    return KueueWorkload(
        name=f.name(wl),
        api_version=str(wl.get("apiVersion", f"{GROUP}/{VERSIONS[0]}")),
        uid=str(f.meta(wl).get("uid", "")),
        active=True if active is None else bool(active),
        admitted=condition(wl, QUOTA_RESERVED),
        cluster_queue=_cluster_queue_of(wl, targets),
    )


def owner_key(wl: Obj) -> tuple[str, str] | None:
    """("namespace/name", uid) of the job that owns a Workload; None for one no job owns."""
    ref = f.controller_owner(wl)
    if ref is None or not ref.get("name"):
        return None
    return f"{f.namespace(wl)}/{ref['name']}", str(ref.get("uid") or "")


_RECORD = (SUSPENDED_BY, SUSPENDED_AT, SUSPEND_REASON, ROOM_FOR, EVICTED_AT)


def admitted_job(job: Job, job_obj: Obj, wl: Obj, targets: Mapping[str, str]) -> Job:
    """`job` as Kueue admits it through `wl`: in its ClusterQueue, at the Workload's priority,
    stopped while the Workload is inactive, with the stop record the Workload carries."""
    info = facts(wl, targets)
    mine = {k: v for k, v in f.annotations_of(wl).items() if k.startswith(PREFIX)}
    notes = {k: v for k, v in job.annotations.items() if k not in _RECORD} | mine
    by_us = SUSPENDED_BY in notes
    priority = f.dig(wl, "spec", "priority")
    return dataclasses.replace(
        job,
        queue=info.cluster_queue or job.queue,
        priority=priority if isinstance(priority, int) else job.priority,
        annotations=notes,
        suspended=job.suspended or not info.active,
        suspended_by_reclaimer=by_us,
        room_for=notes.get(ROOM_FOR) or None if by_us else None,
        stop_reason=notes.get(SUSPEND_REASON, "") if by_us else "",
        stopped_at=f.timestamp(notes.get(SUSPENDED_AT)) if by_us else None,
        managed_by=management.reconciled_elsewhere(job_obj),
        kueue=info,
    )


def join(
    jobs: dict[str, Job],
    job_objs: Mapping[str, Obj],
    wls: Sequence[Obj],
    targets: Mapping[str, str],
    problems: list[str],
) -> None:
    """Each job Kueue admits through an unfinished Workload, joined to it (in place); a
    Workload that cannot be read is a problem, and its job stays left to Kueue."""
    for wl in wls:
        try:
            owner = owner_key(wl)
            if owner is None or condition(wl, FINISHED):
                continue
            key, uid = owner
            job, obj = jobs.get(key), job_objs.get(key)
            if job is None or obj is None or (uid and job.uid and uid != job.uid):
                continue  # not a job the reclaimer stops, or a Workload of an earlier job
            jobs[key] = admitted_job(job, obj, wl, targets)
        except BAD as exc:
            problems.append(f"Workload {f.key(wl)}: skipped, {exc}")


def apart_from_volcano(
    jobs: Sequence[Job], waiting: Sequence[PendingDemand], queues: Sequence[Queue]
) -> tuple[list[Job], list[PendingDemand]]:
    """Jobs and Workload demand of a ClusterQueue left out for its name (a Volcano Queue has
    it, `queues` below): the job is left to Kueue and the demand dropped, since under that name
    they would be judged by Volcano's queue."""
    volcano = {q.name for q in queues if not q.cluster_queue}
    out = []
    for job in jobs:
        cq = job.kueue.cluster_queue if job.kueue is not None else ""
        why = f"Kueue admits it, and its ClusterQueue {cq} has a Volcano Queue's name"
        out.append(dataclasses.replace(job, managed_by=why) if cq in volcano else job)
    return out, [d for d in waiting if d.queue not in volcano]


def queues(cqs: Sequence[Obj], taken: set[str], problems: list[str]) -> list[Queue]:
    """Every ClusterQueue as a queue, but one named like a Volcano Queue (`taken`): with one
    name for two schedulers the jobs of each could not be told apart."""
    out = []
    for cq in cqs:
        if f.name(cq) in taken:
            problems.append(f"ClusterQueue {f.name(cq)}: skipped, a Volcano Queue has its name")
            continue
        try:
            out.append(cluster_queue(cq))
        except BAD as exc:
            problems.append(f"ClusterQueue {f.name(cq)}: skipped, {exc}")
    return out
