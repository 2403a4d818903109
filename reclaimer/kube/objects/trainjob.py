"""Kubeflow Trainer v2's TrainJob (`trainer.kubeflow.org/v1alpha1`) as a gang. Pure.

Built against kubeflow/trainer v2.0.0 through v2.3.0 (tags; master at 8c0f505 reads the same).
A TrainJob owns a JobSet of its own name (controller owner), which owns the Jobs that own the
pods; the trainer's JobSet plugin (pkg/runtime/framework/plugins/jobset/jobset.go `Build`)
re-applies the JobSet from the TrainJob on every reconcile while either is suspended, with the
TrainJob's `spec.suspend`. So the TrainJob is the gang, stopped by its own `spec.suspend`; its
JobSet is never written (a JobSet suspended behind its back is unsuspended at the next reconcile).

Its size: the JobSet's replicated Jobs when the JobSet is listed (`sized_by_jobset`: it holds the
runtime's templates with the TrainJob's overrides applied), else `spec.trainer.numNodes` nodes of
`spec.trainer.resourcesPerNode`. Finished on a True `Complete` or `Failed` condition.

Its Volcano queue: with a runtime's `podGroupPolicy.volcano`, the trainer's Volcano plugin
(pkg/runtime/framework/plugins/volcano/volcano.go `Build`, v2.1.0+) creates a PodGroup named after
the TrainJob, owned by it, whose `spec.queue` is the annotation `scheduling.volcano.sh/queue-name`
of the runtime's `spec.template.metadata`, overridden by the TrainJob's `spec.annotations`
(v2.0, v2.1) or by its `spec.runtimePatches[].trainingRuntimeSpec.template.metadata.annotations`
(v2.2+; pkg/runtime/core/trainingruntime.go `newRuntimeInfo`); the same annotations are put on
the JobSet, and its pods carry `scheduling.k8s.io/group-name: <trainjob>`. So the queue is the
TrainJob's own override, else the JobSet's annotation, else its pods' PodGroup's (resolved when
pods are attached, `gangs.attach_pods`).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any, Final

from reclaimer.kube.objects import fields as f
from reclaimer.kube.objects import kinds
from reclaimer.kube.objects.gangs import job_from_meta
from reclaimer.model import Job

Obj = Mapping[str, Any]
# volcano.sh/apis scheduling/v1beta1 QueueNameAnnotationKey
QUEUE_ANNOTATION: Final = "scheduling.volcano.sh/queue-name"
_DONE: Final = frozenset({"Complete", "Failed"})


def _finished(obj: Obj) -> bool:
    items = f.dig(obj, "status", "conditions")
    return any(
        isinstance(c, dict) and c.get("type") in _DONE and c.get("status") == "True"
        for c in (items if isinstance(items, list) else [])
    )


def _queue_in(annotations: object) -> str:
    if isinstance(annotations, Mapping) and annotations.get(QUEUE_ANNOTATION):
        return str(annotations[QUEUE_ANNOTATION])
    return ""


def queue_override(obj: Obj) -> str:
    """The Volcano queue the TrainJob itself sets over its runtime's; "" when it sets none.
    Later runtime patches win over earlier ones, as the trainer merges them in order."""
    found = _queue_in(f.dig(obj, "spec", "annotations"))
    patches = f.dig(obj, "spec", "runtimePatches")
    for patch in patches if isinstance(patches, list) else []:
        meta = f.dig(patch, "trainingRuntimeSpec", "template", "metadata")
        found = _queue_in(meta.get("annotations") if isinstance(meta, Mapping) else None) or found
    return found


def _trainer_slots(obj: Obj) -> tuple[int, f.Slots]:
    """(nodes, device slots) the TrainJob's own `spec.trainer` asks for."""
    trainer = f.dig(obj, "spec", "trainer")
    trainer = trainer if isinstance(trainer, Mapping) else {}
    nodes = f.int_field(trainer.get("numNodes"), 1)
    per_node = trainer.get("resourcesPerNode") or {}
    spec = {"containers": [{"resources": per_node}]} if isinstance(per_node, Mapping) else None
    if spec is None:
        raise f.FieldError("spec.trainer.resourcesPerNode is not a mapping")
    return nodes, nodes * f.pod_spec_slots(spec)


def train_job(obj: Obj, wk: kinds.WorkloadKind, priorities: Mapping[str, int]) -> Job | None:
    """A TrainJob as a gang, sized by its own spec; None once it is finished."""
    if _finished(obj):
        return None
    nodes, slots = _trainer_slots(obj)
    return job_from_meta(
        obj,
        wk.job_kind,
        queue=queue_override(obj),
        gpus=slots.total,
        mig=slots.mig,
        min_member=max(1, nodes),
        start_time=f.created_at(obj),
        suspended=bool(f.dig(obj, *wk.suspend_path)),
    )


def sized_by_jobset(job: Job, jobset: Obj, jobset_gang: Job | None) -> Job:
    """The TrainJob's gang sized by the JobSet it owns (`jobset_gang`, that JobSet built as a
    gang), and queued by the JobSet's Volcano annotation when the TrainJob sets none."""
    queue = job.queue or _queue_in(f.dig(jobset, "metadata", "annotations"))
    if jobset_gang is None or jobset_gang.gpus <= 0:
        return dataclasses.replace(job, queue=queue)
    return dataclasses.replace(
        job,
        queue=queue,
        gpus=jobset_gang.gpus,
        mig=jobset_gang.mig,
        min_member=jobset_gang.min_member,
    )
