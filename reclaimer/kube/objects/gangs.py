"""Pods grouped into gangs (the model's `Job`) and pending demand, from plain object dicts. Pure.

A gang is what the reclaimer preempts as a whole: a workload it knows how to stop
(`kube.kinds`: every training-operator kind, Notebook, batch Job, JobSet, RayJob, Volcano Job;
built by `kube.workloads` and here), or a bare GPU pod (no controller; Volcano gives such a pod
its own PodGroup). A pod joins the topmost known workload on its chain of controller owners
(`kube.owners`), or failing that the one owning its PodGroup (`scheduling.k8s.io/group-name`).
Pods run by other controllers (a Deployment's ReplicaSet, an unknown CRD) join no gang: evicting
one only makes its controller recreate it; they are reported with the controller's kind. A
workload whose spec names no queue takes its pods' queue. Pending demand is every PodGroup in
Pending/Inqueue, plus unscheduled bare GPU pods that have no PodGroup.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence

from reclaimer.devices import slots_by_resource
from reclaimer.kube.objects import fields as f
from reclaimer.kube.objects import management, volcano, warned
from reclaimer.kube.objects.resources import (
    ACTION_TIME_KEYS,
    DEFAULT_QUEUE,
    DISRUPTION_TARGET,
    EVICTED_AT,
    GROUP_NAME_KEY,
    QUEUE_LABELS,
    ROOM_FOR,
    SUSPEND_REASON,
    SUSPENDED_AT,
    SUSPENDED_BY,
    WORKLOAD_CLASS,
)
from reclaimer.model import Job, JobKind, PendingDemand, Pod, PodPhase

Obj = f.Obj
_PENDING_PG = frozenset({"Pending", "Inqueue"})
_VOLCANO_SUSPENDED = frozenset({"Aborting", "Aborted"})
_VOLCANO_FINISHED = frozenset({"Completed", "Failed", "Terminated", "Terminating"})
_LIVE_POD = frozenset({PodPhase.PENDING, PodPhase.RUNNING, PodPhase.UNKNOWN})


def last_action_time(annotations: Mapping[str, str]) -> float | None:
    times = [f.timestamp(annotations.get(k)) for k in ACTION_TIME_KEYS]
    found = [t for t in times if t is not None]
    return max(found) if found else None


def priority_of(class_name: object, priorities: Mapping[str, int]) -> int:
    return priorities.get(str(class_name), 0) if class_name else 0


def job_from_meta(obj: Obj, kind: JobKind, **values: object) -> Job:
    annotations = f.annotations_of(obj)
    labels = f.labels_of(obj)
    return Job(
        key=f.key(obj),
        kind=kind,
        namespace=f.namespace(obj),
        name=f.name(obj),
        labels=labels,
        annotations=annotations,
        uid=str(f.meta(obj).get("uid", "")),
        suspended_by_reclaimer=SUSPENDED_BY in annotations,
        room_for=annotations.get(ROOM_FOR) or None,
        stop_reason=annotations.get(SUSPEND_REASON, "") if SUSPENDED_BY in annotations else "",
        stopped_at=f.timestamp(annotations.get(SUSPENDED_AT) or annotations.get(EVICTED_AT)),
        workload_class=annotations.get(WORKLOAD_CLASS) or labels.get(WORKLOAD_CLASS),
        managed_by=management.managed_elsewhere(obj),
        controlled_by=management.foreign_owner(obj),
        warning=warned.stop_warning(annotations),
        keep_until=warned.keep_until(annotations),
        **values,  # type: ignore[arg-type]
    )


def unfinished(job: Job, why: str) -> Job:
    """`job` with its stop record set aside: the stop it records did not happen (`why`)."""
    return dataclasses.replace(
        job, suspended_by_reclaimer=False, room_for=None, stopped_at=None, unfinished_stop=why
    )


def volcano_job(
    obj: Obj, priorities: Mapping[str, int], commands: Sequence[Obj] = ()
) -> Job | None:
    """A Volcano batch Job as a gang; None once it completed, failed or terminated.

    It counts as stopped once aborting or aborted, or while an AbortJob Command for it waits
    for Volcano (`commands`: the listed Commands). A reclaimer stop record on a job that is
    neither is an unfinished stop: the controller died, or lost the lease, between the record
    and the Command, or someone resumed the job.
    """
    phase = f.dig(obj, "status", "state", "phase") or "Pending"
    if phase in _VOLCANO_FINISHED:
        return None
    waiting = volcano.pending_actions(commands, str(f.meta(obj).get("uid", "")))
    stopped = phase in _VOLCANO_SUSPENDED or volcano.CommandAction.ABORT in waiting
    tasks = f.dig(obj, "spec", "tasks") or []
    replicas = [f.int_field(t.get("replicas"), 1) for t in tasks]
    slots = sum(
        (
            r * f.pod_spec_slots(f.dig(t, "template", "spec"))
            for r, t in zip(replicas, tasks, strict=True)
        ),
        f.Slots(),
    )
    spec = obj.get("spec") or {}
    used, max_retry = volcano.retries(obj)
    job = job_from_meta(
        obj,
        JobKind.VOLCANO_JOB,
        retries_left=max_retry - used,
        queue=str(spec.get("queue") or DEFAULT_QUEUE),
        gpus=slots.total,
        mig=slots.mig,
        min_member=f.int_field(spec.get("minAvailable"), sum(replicas) or 1),
        priority=priority_of(spec.get("priorityClassName"), priorities),
        start_time=f.created_at(obj),
        suspended=stopped,
    )
    if job.suspended_by_reclaimer and not stopped:
        why = f"{phase}, and no AbortJob Command for it is waiting: the stop was not carried out"
        return unfinished(job, why)
    return job


def _pod_phase(obj: Obj) -> PodPhase:
    try:
        return PodPhase(str(f.dig(obj, "status", "phase") or "Pending"))
    except ValueError:
        return PodPhase.UNKNOWN


def pod_queue(obj: Obj, podgroup: Obj | None) -> str:
    if podgroup is not None and f.dig(podgroup, "spec", "queue"):
        return str(f.dig(podgroup, "spec", "queue"))
    labels = f.labels_of(obj)
    annotations = f.annotations_of(obj)
    for label in QUEUE_LABELS:
        if labels.get(label) or annotations.get(label):
            return labels.get(label) or annotations[label]
    return DEFAULT_QUEUE


def podgroup_name(obj: Obj) -> str | None:
    return f.annotations_of(obj).get(GROUP_NAME_KEY) or f.labels_of(obj).get(GROUP_NAME_KEY)


def pod(obj: Obj, job: str | None, claimed: f.Slots | None = None) -> Pod:
    """A pod, its slots those its containers request plus `claimed`, what its DRA resource
    claims hold or ask for (`kube.objects.dra`)."""
    slots = f.pod_spec_slots(obj.get("spec")) + (claimed or f.Slots())
    return Pod(
        key=f.key(obj),
        namespace=f.namespace(obj),
        name=f.name(obj),
        node=f.dig(obj, "spec", "nodeName") or None,
        gpus=slots.total,
        mig=slots.mig,
        phase=_pod_phase(obj),
        job=job,
        labels=f.labels_of(obj),
        annotations=f.annotations_of(obj),
        start_time=f.timestamp(f.dig(obj, "status", "startTime")) or f.created_at(obj),
        uid=str(f.meta(obj).get("uid", "")),
        releasing=is_releasing(obj),
    )


def is_releasing(obj: Obj) -> bool:
    """A pod on its way out: being deleted (graceful deletion keeps it bound, with its devices,
    until the kubelet confirms), or marked for a disruption (eviction, preemption)."""
    if f.meta(obj).get("deletionTimestamp"):
        return True
    conditions = f.dig(obj, "status", "conditions")
    return any(
        isinstance(c, dict) and c.get("type") == DISRUPTION_TARGET and c.get("status") == "True"
        for c in (conditions if isinstance(conditions, list) else [])
    )


def bare_pod_job(obj: Obj, p: Pod, queue: str, priorities: Mapping[str, int]) -> Job:
    """A bare pod as a gang of one; an eviction record on a pod that is not terminating is an
    unfinished stop (the controller died between the record and the eviction)."""
    spec = obj.get("spec") or {}
    priority = spec.get("priority")
    job = job_from_meta(
        obj,
        JobKind.POD,
        queue=queue,
        gpus=p.gpus,
        mig=p.mig,
        priority=int(priority)
        if isinstance(priority, int)
        else priority_of(spec.get("priorityClassName"), priorities),
        start_time=p.start_time,
        pods=(p.key,),
    )
    if EVICTED_AT in job.annotations and not p.releasing:
        return unfinished(job, "not terminating: the eviction was not carried out")
    return job


def attach_pods(
    jobs: Mapping[str, Job],
    pods: Sequence[Pod],
    pod_queues: Mapping[str, str],
    group_queues: Mapping[str, str] | None = None,
) -> list[Job]:
    """Each job with its (sorted) pod keys, where pods ran the earliest pod start, and its queue.

    The queue is the one Volcano schedules the job by: its PodGroup's `spec.queue`
    (`group_queues`: job key -> queue) first, as the training-operator keeps an existing
    PodGroup's queue and falls back to `schedulingPolicy.queue`, then "default", only when the
    PodGroup names none (kubeflow/training-operator pkg/controller.v1/common/job.go,
    `ReconcileJobs`), and Volcano's own PodGroup of other pods takes the pod's
    `scheduling.volcano.sh/queue-name` annotation (volcano-sh/volcano
    pkg/controllers/podgroup/pg_controller_handler.go, `buildPodGroupFromPod`). Then what the
    spec says, then its pods' queue (`pod_queues`: pod key -> queue), then "default"."""
    group_queues = group_queues or {}
    members: dict[str, list[Pod]] = {}
    for p in pods:
        if p.job is not None:
            members.setdefault(p.job, []).append(p)
    out = []
    for key, job in sorted(jobs.items()):
        mine = sorted(members.get(key, []), key=lambda p: p.key)
        started = [p.start_time for p in mine if p.phase == PodPhase.RUNNING and p.start_time]
        queues = [pod_queues[p.key] for p in mine if p.key in pod_queues] + [DEFAULT_QUEUE]
        out.append(
            dataclasses.replace(
                job,
                pods=tuple(p.key for p in mine) or job.pods,
                start_time=min(started) if started else job.start_time,
                queue=group_queues.get(key) or job.queue or queues[0],
            )
        )
    return out


def is_live(p: Pod) -> bool:
    return p.phase in _LIVE_POD


def pending_from_podgroup(
    pg: Obj, job: Job | None, members: f.Slots, priorities: Mapping[str, int]
) -> PendingDemand | None:
    """Demand of a Pending/Inqueue PodGroup: its job's key, or its owner pod's, or its own.

    What it needs: the device resources of its `minResources`, else its job's, else the sum of
    its member pods' (`members`)."""
    if (f.dig(pg, "status", "phase") or "Pending") not in _PENDING_PG:
        return None
    spec = pg.get("spec") or {}
    listed = f.device_amounts(spec.get("minResources"))
    need = f.Slots({r: int(n) for r, n in listed.items()}) if listed else members
    if not listed and job is not None and job.gpus > 0:
        # a job whose pods get GPUs through DRA claims asks for none in its spec: its pods say
        need = f.Slots(slots_by_resource(job.gpus, job.mig))
    if need.total <= 0:
        return None
    return PendingDemand(
        queue=str(spec.get("queue") or (job.queue if job else "") or DEFAULT_QUEUE),
        job=job.key if job else _podgroup_demand_key(pg),
        gpus=need.total,
        mig=need.mig,
        min_member=f.int_field(spec.get("minMember"), 1),
        since=pending_since(pg),
        priority=priority_of(spec.get("priorityClassName"), priorities),
    )


def pending_since(pg: Obj) -> float:
    """When a pending PodGroup started waiting, as late as its objects tell.

    A PodGroup outlives restarts of its job (a Volcano Job keeps it), so its creation time can
    overstate the wait: the newest `Scheduled` condition that is True marks a later run, and the
    group cannot have waited since before it. Overstating would let `reclaimBusyAfter` fire early.
    """
    since = f.created_at(pg)
    conditions = f.dig(pg, "status", "conditions")
    for c in conditions if isinstance(conditions, list) else []:
        if isinstance(c, dict) and c.get("type") == "Scheduled" and c.get("status") == "True":
            since = max(since, f.timestamp(c.get("lastTransitionTime")) or 0.0)
    return since


def _podgroup_demand_key(pg: Obj) -> str:
    owner = f.controller_owner(pg)
    if owner is not None and owner.get("kind") == "Pod":
        return f"{f.namespace(pg)}/{owner.get('name')}"
    return f.key(pg)
