"""What a restarted controller finds of its own stops: records of stops that never happened, and
stops whose Event was never written. Each cycle the actuator settles both from the snapshot.

A multi-step stop (a Volcano Job: record, then AbortJob Command; a bare pod: record, then
eviction) can be cut between its steps: the process is killed, the lease lapses, a write times
out. The snapshot marks such a job `Job.unfinished_stop` (`kube.objects.gangs`); it is not taken
as stopped. `clear_unfinished` re-reads the object, checks once more that the stop did not happen
(no abort or eviction under way, no Command waiting) and removes the stop record, under the
resourceVersion just read. The planner may instead stop the job again in the same cycle, which
writes a new record: then it is left alone.

A stop's Event has a name fixed by the object and the second of its record (`event_name`), so
the next process can write the Event of a stop it finds without one (a create answered 409 means
it was there). Events live an hour by default (kube-apiserver `--event-ttl`), so only stops that
recent are looked at (`EVENT_TTL_S`).
"""

from __future__ import annotations

from typing import Any, Final

from reclaimer.kube.objects import fields as f
from reclaimer.kube.objects import gangs, volcano
from reclaimer.kube.objects import resources as r
from reclaimer.kube.operations import STOP_RECORD, Precondition
from reclaimer.kube.write import KubeWriter
from reclaimer.model import Job, JobKind

Obj = dict[str, Any]

EVENT_TTL_S: Final = 3600.0  # kube-apiserver --event-ttl default: an older Event is gone anyway


def event_name(object_name: str, at: float) -> str:
    """The name of the Event of the stop recorded at `at` (a DNS subdomain, like client-go's
    `<object>.<time in hex>` names, in whole seconds so the record's stamp gives it back)."""
    return f"{object_name}.gpu-reclaim-{int(at):x}"[:253]


def clear_unfinished(w: KubeWriter, job: Job) -> Obj:
    """Remove the stop record of `job`, whose stop did not happen; `Precondition` when a fresh
    read shows it did happen after all, or that the record is gone. Returns the object read."""
    if job.kind is JobKind.VOLCANO_JOB:
        obj = w.get_custom(r.VOLCANO_JOBS, job.namespace, job.name)
        _check(obj, job)
        phase = volcano.phase(obj)
        if phase in volcano.RESUMABLE:
            raise Precondition(f"{job.key} is {phase}: the stop happened after all")
        uid = str(f.meta(obj).get("uid", ""))
        if volcano.pending_actions(w.list_custom(r.VOLCANO_COMMANDS, job.namespace), uid):
            raise Precondition(f"{job.key} has a Command waiting for Volcano: leaving its record")
        w.patch_custom(r.VOLCANO_JOBS, job.namespace, job.name, _undo(obj))
        return obj
    if job.kind is JobKind.POD:
        obj = w.get_pod(job.namespace, job.name)
        _check(obj, job)
        if gangs.is_releasing(obj):
            raise Precondition(f"{job.key} is terminating: the eviction happened after all")
        w.patch_pod(job.namespace, job.name, _undo(obj))
        return obj
    raise Precondition(f"{job.key}: a {job.kind} stops in one write, it has no unfinished stop")


def _check(obj: Obj, job: Job) -> None:
    uid = str(f.meta(obj).get("uid", ""))
    if job.uid and uid and uid != job.uid:
        raise Precondition(f"{job.key} was replaced since the snapshot (uid {uid})")
    if not any(k in f.annotations_of(obj) for k in STOP_RECORD):
        raise Precondition(f"{job.key} carries no stop record any more")


def _undo(obj: Obj) -> Obj:
    notes = f.annotations_of(obj)
    undo = {k: None for k in STOP_RECORD if k in notes}
    version = str(obj["metadata"]["resourceVersion"])
    return {"metadata": {"resourceVersion": version, "annotations": undo}}


def needs_event(job: Job, now: float) -> bool:
    """A stop of the reclaimer's that took effect recently enough for its Event to matter: a
    job it suspended or aborted, or a bare pod it evicted that is still terminating."""
    stopped = job.suspended and job.suspended_by_reclaimer
    evicted = job.kind is JobKind.POD and r.EVICTED_AT in job.annotations
    return (
        (stopped or evicted)
        and not job.unfinished_stop
        and job.stopped_at is not None
        and now - job.stopped_at <= EVENT_TTL_S
    )


def found_message(job: Job) -> str:
    """The Event message of a stop found without its Event."""
    notes = job.annotations
    parts = [
        f"found stopped by {notes.get(r.SUSPENDED_BY, 'the reclaimer')} at "
        f"{notes.get(r.SUSPENDED_AT) or notes.get(r.EVICTED_AT, '?')}",
        f"reason {notes.get(r.SUSPEND_REASON, '?')}",
    ]
    if job.room_for:
        parts.append(f"for pending {job.room_for}")
    parts.append("the Event of this stop was not written (the controller stopped before it)")
    return f"preempt {job.key}: " + "; ".join(parts)
