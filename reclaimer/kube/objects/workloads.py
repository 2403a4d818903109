"""Every suspendable workload as a gang (the model's `Job`), from its object dict. Pure.

One builder per shape of spec, all answering the same questions: how many GPUs and pods the
whole workload holds when it runs, whether it is stopped, whether it is finished (then it is
no gang at all), when it started, its queue and priority when its spec says them:
- training-operator kinds (`spec.<x>ReplicaSpecs`: replicas x the template's GPUs;
  `runPolicy.schedulingPolicy` gives queue, minAvailable and priority class; finished on a True
  Succeeded or Failed condition);
- `batch/v1` Job (`parallelism` pods of its template; Complete/Failed conditions);
- JobSet (replicated jobs x their Jobs' parallelism; Completed/Failed conditions);
- RayJob (the head plus every worker group's replicas; finished once its deployment status is
  Complete or Failed, or its job status final);
- Notebook (one pod of its template; stopped while `kubeflow-resource-stopped` is set; never
  finished);
- TrainJob (`kube.trainjob`: its JobSet's size, else its trainer's nodes; its queue override).
A workload whose spec names no queue takes the Volcano queue its pod template is annotated or
labelled with, else its pods' (the queue label or annotation). Its PodGroup's queue, when it has
one, overrides both: that is the queue Volcano schedules it by. Both are resolved when pods are
attached (`gangs.attach_pods`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from reclaimer.kube.objects import fields as f
from reclaimer.kube.objects import kinds, trainjob
from reclaimer.kube.objects.gangs import job_from_meta, priority_of
from reclaimer.kube.objects.resources import QUEUE_LABELS
from reclaimer.model import Job

Obj = Mapping[str, Any]
Builder = Callable[[Obj, kinds.WorkloadKind, Mapping[str, int]], Job | None]


def _condition(obj: Obj, *types: str) -> bool:
    items = f.dig(obj, "status", "conditions")
    return any(
        isinstance(c, dict) and c.get("type") in types and c.get("status") == "True"
        for c in (items if isinstance(items, list) else [])
    )


def _suspended(obj: Obj, wk: kinds.WorkloadKind) -> bool:
    if wk.stop is kinds.Stop.NOTEBOOK:
        return kinds.NOTEBOOK_STOPPED in f.annotations_of(obj)
    return bool(f.dig(obj, *wk.suspend_path))


def _start(obj: Obj) -> float:
    return f.timestamp(f.dig(obj, "status", "startTime")) or f.created_at(obj)


def training_job(obj: Obj, wk: kinds.WorkloadKind, priorities: Mapping[str, int]) -> Job | None:
    """A training-operator job (PyTorchJob, TFJob, MPIJob, ...); None once it is finished."""
    if _condition(obj, "Succeeded", "Failed"):
        return None
    specs = f.dig(obj, "spec", wk.replica_specs) or {}
    replicas = {n: f.int_field(s.get("replicas"), 1) for n, s in specs.items()}
    slots = sum(
        (replicas[n] * f.pod_spec_slots(f.dig(s, "template", "spec")) for n, s in specs.items()),
        f.Slots(),
    )
    sched = f.dig(obj, "spec", "runPolicy", "schedulingPolicy") or {}
    templates = [s.get("template") for s in specs.values() if isinstance(s, Mapping)]
    return job_from_meta(
        obj,
        wk.job_kind,
        # no queue here is no answer yet: the training-operator creates the PodGroup in
        # "default" only when no PodGroup of the job names one (`gangs.attach_pods` decides)
        queue=str(sched.get("queue") or next(filter(None, map(_template_queue, templates)), "")),
        gpus=slots.total,
        mig=slots.mig,
        min_member=f.int_field(sched.get("minAvailable"), sum(replicas.values()) or 1),
        priority=priority_of(sched.get("priorityClass"), priorities),
        start_time=_start(obj),
        suspended=_suspended(obj, wk),
    )


def _template_queue(template: object) -> str:
    """The Volcano queue a pod template's annotations or labels name; "" when none."""
    meta = f.dig(template, "metadata") if isinstance(template, Mapping) else None
    for where in ("annotations", "labels"):
        found = f.dig(meta, where) if isinstance(meta, Mapping) else None
        for key in QUEUE_LABELS:
            if isinstance(found, Mapping) and found.get(key):
                return str(found[key])
    return ""


def _pods_job(
    obj: Obj, wk: kinds.WorkloadKind, slots: f.Slots, pods: int, template: object = None
) -> Job:
    """A workload whose queue is its pod template's, else its pods' (set when attached)."""
    return job_from_meta(
        obj,
        wk.job_kind,
        queue=_template_queue(template),
        gpus=slots.total,
        mig=slots.mig,
        min_member=max(1, pods),
        start_time=_start(obj),
        suspended=_suspended(obj, wk),
    )


def _job_template(spec: object) -> tuple[int, f.Slots]:
    """(pods, device slots) of a batch Job spec: `parallelism` pods (default 1) of its template."""
    pods = f.int_field(f.dig(spec, "parallelism") if isinstance(spec, dict) else None, 1)
    per_pod = f.pod_spec_slots(f.dig(spec, "template", "spec") if isinstance(spec, dict) else None)
    return pods, pods * per_pod


def batch_job(obj: Obj, wk: kinds.WorkloadKind, priorities: Mapping[str, int]) -> Job | None:
    if _condition(obj, "Complete", "Failed"):
        return None
    pods, gpus = _job_template(obj.get("spec"))
    return _pods_job(obj, wk, gpus, pods, f.dig(obj, "spec", "template"))


def jobset(obj: Obj, wk: kinds.WorkloadKind, priorities: Mapping[str, int]) -> Job | None:
    if _condition(obj, "Completed", "Failed"):
        return None
    pods, gpus = 0, f.Slots()
    first = None
    for rj in f.dig(obj, "spec", "replicatedJobs") or []:
        copies = f.int_field(rj.get("replicas"), 1)
        p, g = _job_template(f.dig(rj, "template", "spec"))
        pods, gpus = pods + copies * p, gpus + copies * g
        first = first or f.dig(rj, "template", "spec", "template")
    return _pods_job(obj, wk, gpus, pods, first)


_RAY_DONE = frozenset({"Complete", "Failed"})
_RAY_JOB_DONE = frozenset({"SUCCEEDED", "FAILED", "STOPPED"})


def ray_job(obj: Obj, wk: kinds.WorkloadKind, priorities: Mapping[str, int]) -> Job | None:
    status = obj.get("status") or {}
    if status.get("jobDeploymentStatus") in _RAY_DONE or status.get("jobStatus") in _RAY_JOB_DONE:
        return None
    cluster = f.dig(obj, "spec", "rayClusterSpec") or {}
    head = f.dig(cluster, "headGroupSpec", "template")
    pods, gpus = 1, f.pod_spec_slots(f.dig(head, "spec") if head else None)
    for group in cluster.get("workerGroupSpecs") or []:
        copies = f.int_field(group.get("replicas"), 1)
        pods += copies
        gpus += copies * f.pod_spec_slots(f.dig(group, "template", "spec"))
    return _pods_job(obj, wk, gpus, pods, head)


def notebook(obj: Obj, wk: kinds.WorkloadKind, priorities: Mapping[str, int]) -> Job | None:
    gpus = f.pod_spec_slots(f.dig(obj, "spec", "template", "spec"))
    return _pods_job(obj, wk, gpus, 1, f.dig(obj, "spec", "template"))


BUILDERS: Mapping[str, Builder] = {
    "training": training_job,
    "Job": batch_job,
    "JobSet": jobset,
    "RayJob": ray_job,
    "Notebook": notebook,
    "TrainJob": trainjob.train_job,
}


def build(obj: Obj, priorities: Mapping[str, int]) -> Job | None:
    """The gang of a suspendable workload object (its `apiVersion`/`kind` say which)."""
    wk = kinds.of_owner(str(obj.get("apiVersion", "")), str(obj.get("kind", "")))
    if wk is None or wk not in kinds.SUSPENDABLE:
        raise f.FieldError(f"not a suspendable workload: {obj.get('kind')!r}")
    shape = "training" if wk.replica_specs else wk.resource.kind
    return BUILDERS[shape](obj, wk, priorities)
