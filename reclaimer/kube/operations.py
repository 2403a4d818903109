"""Each action kind as a short sequence of API calls, in the order that keeps the cluster safe.

Every operation first re-reads its object (the plan is minutes old): a vanished object raises
`KubeError(404)`, a replaced one (new uid) or one already in the wanted state raises `Precondition`.
Before a whole job is stopped its namespace's PodDisruptionBudgets are read again
(`check_budgets`): one that now allows fewer disruptions than the stop causes raises
`Precondition` too, as does a live object that another controller now admits, reconciles or
owns (`check_owners`, `kube.management`). A stop records the pending job it makes room for
(`gpu-reclaim.io/room-for`).
Writes carry the resourceVersion just read, so a concurrent change answers 409 and the actuator
re-runs the operation once. Order matters:
- PyTorchJob: one merge patch sets `spec.runPolicy.suspend` and the `gpu-reclaim.io/` annotations
  together (atomic), sent with `fieldValidation=Strict`: a training-operator older than v1.7 has
  no `runPolicy.suspend` in its CRD, and the API server would otherwise prune the field silently
  while the job keeps running; Strict makes it answer 400, reported as a failed action.
- Volcano Job, stop: annotate, then create the `bus.volcano.sh/v1alpha1` AbortJob Command. A
  create refused outright (4xx) rolls the annotation back, so the record never claims a stop that
  did not happen. A create answered 5xx or timed out may have been stored (`may_have_happened`):
  the Command is read back by its name; found, the stop happened; not found or unreadable, the
  record stays and `Unconfirmed` is raised: Volcano may already have taken the Command up (it
  deletes it first), and the next cycle's snapshot tells (an aborted job, a pending Command, or
  neither: then `kube.stops` clears the record). Resume: the ResumeJob Command first, then the
  record is cleared, so an interrupted resume leaves a record on a running job (cleared the same
  way), never a stopped job without one. No Command is sent while one is still pending for the
  job. `kube.volcano` says when Volcano would act on the Command at all, and refuses to abort a
  job whose resume would spend its last retry (and fail it).
- Bare pod: a dry-run eviction first (a PDB answers 429 before anything is written), then the
  annotation, then the real eviction; a refused eviction rolls the annotation back, one answered
  5xx or timed out is read back (the pod gone or terminating: it happened).
Reshapes are `kube.reshaping`; interrupted stops and lost Events are `kube.stops`.
"""

from __future__ import annotations

import contextlib
from collections.abc import Mapping, Sequence
from typing import Any

from reclaimer.kube.client import KubeError
from reclaimer.kube.objects import disruption, gangs, kinds, management, volcano
from reclaimer.kube.objects import fields as f
from reclaimer.kube.objects import resources as r
from reclaimer.kube.write import KubeWriter, NotLeader, rfc3339
from reclaimer.model import Job, Pod

Obj = dict[str, Any]


class Precondition(Exception):
    """The live object is not in the state the plan assumed: skip, nothing was written."""


class Unconfirmed(Exception):
    """A write of a stop answered 5xx or timed out and reading back could not tell whether it
    happened: the stop record stays, and the next cycle's snapshot decides."""

    def __init__(self, message: str, status: int) -> None:
        super().__init__(message)
        self.status = status  # the write's answer (0: none)


# the stop record's keys, as a stop writes them (`suspend_record`, `evict_bare_pod`)
STOP_RECORD: tuple[str, ...] = (
    r.SUSPENDED_BY, r.SUSPENDED_AT, r.SUSPEND_REASON, r.ROOM_FOR, r.EVICTED_AT,
)  # fmt: skip


def may_have_happened(exc: KubeError) -> bool:
    """A 5xx (a 504 gateway timeout may come after the write was stored) or no answer at all
    (status 0: a client timeout, a dropped connection): the write may have been carried out."""
    return exc.status == 0 or exc.status >= 500


def _check_uid(obj: Obj, uid: str, what: str) -> None:
    live = f.dig(obj, "metadata", "uid") or ""
    if uid and live and uid != live:
        raise Precondition(f"{what} was replaced since the snapshot (uid {live})")


def _annotations(obj: Obj) -> dict[str, str]:
    return dict(f.dig(obj, "metadata", "annotations") or {})


def _rv(obj: Obj) -> str:
    return str(obj["metadata"]["resourceVersion"])


def involved(obj: Obj, res: r.Resource) -> dict[str, str]:
    meta = obj.get("metadata") or {}
    return {
        "apiVersion": res.api_version,
        "kind": res.kind,
        "name": str(meta.get("name", "")),
        "namespace": str(meta.get("namespace", "")),
        "uid": str(meta.get("uid", "")),
    }


def suspend_record(
    identity: str, now: float, reason: str, room_for: str | None = None
) -> dict[str, str | None]:
    """What a stop writes on the job; `room_for` names the pending job the room is made for, so
    a restarted or newly elected reclaimer knows that room is in flight."""
    return {
        r.SUSPENDED_BY: identity,
        r.SUSPENDED_AT: rfc3339(now),
        r.SUSPEND_REASON: reason,
        r.ROOM_FOR: room_for,
        r.RESUMED_AT: None,
        **dict.fromkeys(r.WARNING_RECORD),  # a scheduled stop is done with once it happens
    }


def resume_record(now: float) -> dict[str, str | None]:
    return {
        r.SUSPENDED_BY: None,
        r.SUSPENDED_AT: None,
        r.SUSPEND_REASON: None,
        r.ROOM_FOR: None,
        r.RESUMED_AT: rfc3339(now),
    }


def check_budgets(w: KubeWriter, job: Job, pods: Sequence[Pod]) -> None:
    """Refuse to stop `job` when a PodDisruptionBudget, read now, forbids disrupting its pods."""
    why = disruption.blocking_budget(job.key, pods, w.list_pdbs(job.namespace))
    if why:
        raise Precondition(why)


def check_owners(obj: Obj, job: Job) -> None:
    """Refuse to stop `job` when, read now, another controller admits, reconciles or owns it."""
    why = management.managed_elsewhere(obj) or management.foreign_owner(obj)
    if why:
        raise Precondition(f"{job.key}: {why}")


def set_suspended(
    w: KubeWriter,
    job: Job,
    suspend: bool,
    record: Mapping[str, str | None],
    pods: Sequence[Pod] = (),
) -> Obj:
    """Stop or resume a suspendable workload the way its kind is stopped (`kube.kinds`)."""
    wk = kinds.BY_JOB_KIND[job.kind]
    obj = w.get_custom(wk.resource, job.namespace, job.name)
    _check_uid(obj, job.uid, job.key)
    if suspend:
        check_owners(obj, job)
        check_budgets(w, job, pods)
    if _is_stopped(obj, wk) == suspend:
        raise Precondition(f"{job.key} is already {'suspended' if suspend else 'running'}")
    if not suspend and r.SUSPENDED_BY not in _annotations(obj):
        raise Precondition(f"{job.key} was not suspended by the reclaimer: leaving it")
    body = _stop_patch(wk, suspend, record, stamp=record.get(r.SUSPENDED_AT))
    body["metadata"]["resourceVersion"] = _rv(obj)
    try:
        w.patch_custom(wk.resource, job.namespace, job.name, body)
    except KubeError as exc:
        if exc.status == 400 and wk.suspend_path and wk.suspend_path[-1] in exc.message:
            raise KubeError(400, "BadRequest", f"{_no_suspend(wk)} ({exc.message})") from exc
        raise
    return obj


def _is_stopped(obj: Obj, wk: kinds.WorkloadKind) -> bool:
    if wk.stop is kinds.Stop.NOTEBOOK:
        return kinds.NOTEBOOK_STOPPED in _annotations(obj)
    return bool(f.dig(obj, *wk.suspend_path))


def _stop_patch(
    wk: kinds.WorkloadKind, suspend: bool, record: Mapping[str, str | None], stamp: str | None
) -> dict[str, Any]:
    """One merge patch: the stop (a field, or the Notebook annotation) with the record."""
    notes: dict[str, str | None] = dict(record)
    if wk.stop is kinds.Stop.NOTEBOOK:
        notes[kinds.NOTEBOOK_STOPPED] = stamp if suspend else None
        return {"metadata": {"annotations": notes}}
    spec: dict[str, Any] = {wk.suspend_path[-1]: suspend}
    for part in reversed(wk.suspend_path[1:-1]):
        spec = {part: spec}
    return {"metadata": {"annotations": notes}, "spec": spec}


# the release that added the stop field, per kind: an older CRD prunes it (see `set_suspended`)
_SINCE = {
    kinds.BATCH_JOB.job_kind: "Kubernetes 1.24",
    kinds.JOBSET.job_kind: "JobSet v0.2",
    kinds.RAY_JOB.job_kind: "KubeRay v1.0",
    kinds.TRAIN_JOB.job_kind: "Kubeflow Trainer v2.0",
}


def _no_suspend(wk: kinds.WorkloadKind) -> str:
    since = _SINCE.get(wk.job_kind, "training-operator v1.7")
    field = ".".join(wk.suspend_path)
    return (
        f"the {wk.resource.kind} CRD does not declare {field} (older than {since}): the job "
        f"cannot be suspended; upgrade it"
    )


def volcano_command(
    w: KubeWriter,
    job: Job,
    abort: bool,
    record: Mapping[str, str | None],
    message: str,
    *,
    pods: Sequence[Pod] = (),
) -> tuple[Obj, str]:
    """Abort or resume a Volcano Job by a Command; (the Job as read, a note on the create)."""
    obj = w.get_custom(r.VOLCANO_JOBS, job.namespace, job.name)
    _check_uid(obj, job.uid, job.key)
    if abort:
        check_budgets(w, job, pods)
    if not abort and r.SUSPENDED_BY not in _annotations(obj):
        raise Precondition(f"{job.key} was not suspended by the reclaimer: leaving it")
    action = volcano.CommandAction.ABORT if abort else volcano.CommandAction.RESUME
    why = volcano.refusal(obj, action)
    if why is not None:
        raise Precondition(f"{job.key} {why}")
    uid = str(f.dig(obj, "metadata", "uid") or "")
    waiting = volcano.pending_actions(w.list_custom(r.VOLCANO_COMMANDS, job.namespace), uid)
    if waiting:
        names = " and ".join(sorted(waiting))
        raise Precondition(f"{job.key} has a {names} Command that Volcano has not taken up yet")
    at = f.timestamp(record.get(r.SUSPENDED_AT if abort else r.RESUMED_AT)) or 0.0
    body = volcano.command(obj, action, message, volcano.command_name(job.name, action, at))
    if not abort:  # the Command first: an interrupted resume leaves a record, never a lost job
        note = _create_command(w, job, body)
        cleared = {"metadata": {"annotations": dict(record)}}  # no resourceVersion: Volcano
        w.patch_custom(r.VOLCANO_JOBS, job.namespace, job.name, cleared)  # updates its status
        return obj, note
    patch = {"metadata": {"resourceVersion": _rv(obj), "annotations": dict(record)}}
    w.patch_custom(r.VOLCANO_JOBS, job.namespace, job.name, patch)
    try:
        note = _create_command(w, job, body)
    except KubeError:  # refused outright: it was not stored
        undo = {k: _annotations(obj).get(k) for k in record}
        # best effort: with the Command refused, a stale record is cleared by `kube.stops`
        with contextlib.suppress(KubeError, NotLeader):
            w.patch_custom(
                r.VOLCANO_JOBS, job.namespace, job.name, {"metadata": {"annotations": undo}}
            )
        raise
    return obj, note


def _create_command(w: KubeWriter, job: Job, body: Obj) -> str:
    """Create the Command; '' when it was stored, a note when that was learnt by reading back.
    Raises `KubeError` when it was refused, `Unconfirmed` when that cannot be known now."""
    name = str(body["metadata"]["name"])
    try:
        w.create_custom(r.VOLCANO_COMMANDS, job.namespace, body)
    except KubeError as exc:
        if exc.status == 409:  # only an earlier try of this very Command has its name
            return f"Command {name} was already stored"
        if not may_have_happened(exc):
            raise
        try:
            w.get_custom(r.VOLCANO_COMMANDS, job.namespace, name)
        except KubeError as again:
            raise Unconfirmed(
                f"creating Command {name} answered {exc}; reading it back answered {again}: "
                "Volcano may have taken it up already, so the stop record stays and the next "
                "cycle clears it unless the job was aborted",
                exc.status,
            ) from exc
        answer = exc.status or "no answer"
        return f"the create answered {answer}; read back, Command {name} was stored"
    return ""


def evict_bare_pod(
    w: KubeWriter,
    job: Job,
    now: float,
    reason: str,
    *,
    room_for: str | None = None,
    pods: Sequence[Pod] = (),
) -> Obj:
    obj = w.get_pod(job.namespace, job.name)
    _check_uid(obj, job.uid, job.key)
    check_budgets(w, job, pods)
    w.evict_pod(job.namespace, job.name, probe=True)  # 429 here: a PDB blocks it, nothing written
    record = {r.EVICTED_AT: rfc3339(now), r.SUSPEND_REASON: reason, r.ROOM_FOR: room_for}
    w.patch_pod(
        job.namespace, job.name, {"metadata": {"resourceVersion": _rv(obj), "annotations": record}}
    )
    if w.dry_run:
        return obj
    try:
        w.evict_pod(job.namespace, job.name)
    except KubeError as exc:
        if may_have_happened(exc) and _evicted(w, job):
            return obj
        if may_have_happened(exc):
            raise Unconfirmed(
                f"evicting {job.key} answered {exc} and the pod is not terminating yet: the "
                "record stays, and the next cycle clears it unless the pod was evicted",
                exc.status,
            ) from exc
        undo = {k: _annotations(obj).get(k) for k in record}
        with contextlib.suppress(KubeError, NotLeader):
            w.patch_pod(job.namespace, job.name, {"metadata": {"annotations": undo}})
        raise
    return obj


def _evicted(w: KubeWriter, job: Job) -> bool:
    """Read back after an unanswered eviction: the pod is gone, replaced or terminating."""
    try:
        obj = w.get_pod(job.namespace, job.name)
    except KubeError as exc:
        return exc.status == 404
    replaced = bool(job.uid) and f.dig(obj, "metadata", "uid") != job.uid
    return replaced or gangs.is_releasing(obj)
