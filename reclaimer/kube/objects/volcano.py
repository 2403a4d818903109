"""What a Volcano `bus.volcano.sh/v1alpha1` Command is, and when sending one is safe. Pure.

The reclaimer stops and restarts a Volcano Job the way `vcctl job suspend/resume` does: it
creates a Command in the Job's namespace whose `target` (a `metav1.OwnerReference`: apiVersion,
kind, name, uid, all required by the CRD schema) names the Job. Volcano's job controller watches
only Commands whose target is a `batch.volcano.sh/v1alpha1` `Job`, deletes each one before acting
(so it runs at most once), and hands the action to the Job's current state:
- `AbortJob` acts only in Pending and Running: the job's live pods are deleted (marked
  out-of-sync first, so no `PodEvicted` policy fires) and the phase goes Aborting, then Aborted.
  In Restarting it would only kill the pods again, and finishing phases ignore it.
- `ResumeJob` acts only in Aborting and Aborted: the phase goes Restarting and `retryCount`
  goes up by one. Nothing ever lowers `retryCount`, and a Restarting job whose `retryCount`
  reached `maxRetry` (default 3) is marked Failed. So every abort/resume round spends one of the
  job's retries, and a job with one retry left must not be aborted: resuming it would fail it.
  In any other phase ResumeJob is a plain sync (Restarting: kill the pods again).
The Command also carries the Job as its controlling owner, so the garbage collector removes a
Command left behind by a deleted Job. Not `blockOwnerDeletion`: with the
OwnerReferencesPermissionEnforcement admission plugin, setting it needs `update` on
`jobs/finalizers`, which this controller has no other use for.
Its name is fixed by the job, the action and the second of the record it goes with
(`command_name`), not generated: after a create answered 5xx or timed out, a GET by that name
tells whether it was stored, and a repeated create answers 409. A Command still listed has not
been taken up by Volcano yet (`pending_actions`): an AbortJob waiting for a Running job is a stop
made, which Volcano has yet to carry out.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from enum import StrEnum
from typing import Any, Final

from reclaimer.kube.objects import fields as f
from reclaimer.kube.objects.resources import VOLCANO_COMMANDS, VOLCANO_JOBS
from reclaimer.model import spares_a_retry

Obj = dict[str, Any]

DEFAULT_MAX_RETRY: Final = 3  # Job.spec.maxRetry: CRD default and the admission webhook's
REASON: Final = "GpuReclaim"  # Command.reason: one CamelCase word
MESSAGE_LIMIT: Final = 1024


class CommandAction(StrEnum):
    """The two Command actions the reclaimer sends (volcano-sh/apis bus/v1alpha1 actions.go)."""

    ABORT = "AbortJob"
    RESUME = "ResumeJob"


ABORTABLE: Final = frozenset({"Pending", "Running"})
RESUMABLE: Final = frozenset({"Aborting", "Aborted"})


def phase(job: Obj) -> str:
    """The Job's phase; a Job without one is handled as Pending by Volcano."""
    return str(f.dig(job, "status", "state", "phase") or "Pending")


def retries(job: f.Obj) -> tuple[int, int]:
    """(`status.retryCount`, `spec.maxRetry`) of a Job; an unset maxRetry is Volcano's default."""
    used = f.int_field(f.dig(job, "status", "retryCount"), 0)
    return used, f.int_field(f.dig(job, "spec", "maxRetry"), 0) or DEFAULT_MAX_RETRY


def refusal(job: Obj, action: CommandAction) -> str | None:
    """Why sending `action` to this live Job would be wrong, or None when it is safe."""
    now = phase(job)
    wanted = ABORTABLE if action is CommandAction.ABORT else RESUMABLE
    if now not in wanted:
        return f"is {now}: Volcano acts on {action} only in {' or '.join(sorted(wanted))}"
    used, max_retry = retries(job)
    if not spares_a_retry(max_retry - used):
        return (
            f"has used {used} of maxRetry {max_retry}: ResumeJob counts one more, and Volcano "
            "fails a restarting job at maxRetry"
        )
    return None


def command_name(job_name: str, action: CommandAction, at: float) -> str:
    """The Command's name: job, action and the whole second of its record (a DNS subdomain)."""
    return f"{job_name}-{action.lower()}-{int(at)}"[:253]


def pending_actions(commands: Iterable[Mapping[str, Any]], uid: str) -> frozenset[CommandAction]:
    """The actions of the listed Commands that target the Job with this uid, not yet taken up
    (Volcano deletes each Command before it acts on it)."""
    found: set[CommandAction] = set()
    for cmd in commands:
        target = cmd.get("target")
        if not isinstance(target, dict) or not uid or target.get("uid") != uid:
            continue
        if target.get("kind") != VOLCANO_JOBS.kind:
            continue
        if cmd.get("action") in CommandAction._value2member_map_:
            found.add(CommandAction(cmd["action"]))
    return frozenset(found)


def command(job: Obj, action: CommandAction, message: str, name: str) -> Obj:
    """The Command named `name` that makes Volcano's job controller apply `action` to `job`."""
    meta = job["metadata"]
    owner = {
        "apiVersion": VOLCANO_JOBS.api_version,
        "kind": VOLCANO_JOBS.kind,
        "name": meta["name"],
        "uid": meta["uid"],
        "controller": True,
    }
    return {
        "apiVersion": VOLCANO_COMMANDS.api_version,
        "kind": VOLCANO_COMMANDS.kind,
        "metadata": {
            "name": name,
            "namespace": meta["namespace"],
            "ownerReferences": [owner],
        },
        "action": str(action),
        "target": dict(owner),
        "reason": REASON,
        "message": message[:MESSAGE_LIMIT],
    }
