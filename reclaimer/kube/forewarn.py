"""The writes of a warning before a stop: the scheduled stop's record on the job, and its removal.

A warning is one merge patch of the job's `gpu-reclaim.io/` annotations (`reclaim-after`,
`warned-at`, `warned-for`, `warn-reason`), sent with the resourceVersion just read, so a
concurrent change answers 409 (the actuator re-runs it once). The record is what every later
cycle reads the countdown from (`kube.objects.warned`): a restarted or newly elected reclaimer
keeps it, neither restarting nor skipping it. Writing a warning on a job that already carries one
raises `Precondition` (the countdown is never restarted); withdrawing one from a job that carries
none does too. The stop itself removes the record (`operations.suspend_record`).
Workloads are the kinds' resources (`kube.objects.kinds`), a bare pod is a core/v1 Pod.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from reclaimer.kube.objects import fields as f
from reclaimer.kube.objects import kinds
from reclaimer.kube.objects import resources as r
from reclaimer.kube.operations import Precondition, involved
from reclaimer.kube.write import KubeWriter, rfc3339
from reclaimer.model import Job, JobKind

Obj = dict[str, Any]


def _read(w: KubeWriter, job: Job) -> Obj:
    if job.kind is JobKind.POD:
        obj = w.get_pod(job.namespace, job.name)
    else:
        obj = w.get_custom(kinds.resource_of(job.kind), job.namespace, job.name)
    uid = str(f.meta(obj).get("uid", ""))
    if job.uid and uid and uid != job.uid:
        raise Precondition(f"{job.key} was replaced since the snapshot (uid {uid})")
    return obj


def _patch(w: KubeWriter, job: Job, obj: Obj, notes: Mapping[str, str | None]) -> None:
    version = str(obj["metadata"]["resourceVersion"])
    body = {"metadata": {"resourceVersion": version, "annotations": dict(notes)}}
    if job.kind is JobKind.POD:
        w.patch_pod(job.namespace, job.name, body)
    else:
        w.patch_custom(kinds.resource_of(job.kind), job.namespace, job.name, body)


def schedule_stop(
    w: KubeWriter, job: Job, *, now: float, stop_at: float, for_pending: str, reason: str
) -> dict[str, str]:
    """Write the warning record; the involved object for its Event."""
    obj = _read(w, job)
    notes = f.annotations_of(obj)
    if r.RECLAIM_AFTER in notes:
        raise Precondition(f"{job.key} is already warned: its stop is at {notes[r.RECLAIM_AFTER]}")
    record = {
        r.RECLAIM_AFTER: rfc3339(stop_at),
        r.WARNED_AT: rfc3339(now),
        r.WARNED_FOR: for_pending,
        r.WARN_REASON: reason,
    }
    _patch(w, job, obj, record)
    return involved(obj, kinds.resource_of(job.kind))


def withdraw(w: KubeWriter, job: Job) -> dict[str, str]:
    """Remove the warning record; the involved object for the cancel's Event."""
    obj = _read(w, job)
    notes = f.annotations_of(obj)
    if not any(k in notes for k in r.WARNING_RECORD):
        raise Precondition(f"{job.key} carries no scheduled stop any more")
    _patch(w, job, obj, dict.fromkeys(r.WARNING_RECORD))
    return involved(obj, kinds.resource_of(job.kind))
