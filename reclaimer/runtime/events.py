"""The Kubernetes Events the actuator writes: how they are written, their reasons and messages.

`KubeEventRecorder` turns one Event into a core/v1 object (`kube.write.event_body`) and creates
it through the actuator's writer, so a dry run sends it with `dryRun=All` like every other write.
Each action kind, plan warning and raise refusal has its own fixed reason (`EVENT_REASONS` and
the tables beside it), so that `kubectl get events --field-selector reason=...` finds them;
`describe` writes the message: what was done, why, and the evidence the plan carried.
"""

from __future__ import annotations

from collections.abc import Mapping

from reclaimer.decisions import Action, ActionKind, Evidence, Reason
from reclaimer.devices import count
from reclaimer.forecast import wording
from reclaimer.kube.objects import kinds
from reclaimer.kube.objects import resources as r
from reclaimer.kube.write import KubeWriter, event_body
from reclaimer.model import JobKind
from reclaimer.plan.raises import REFUSALS


class KubeEventRecorder:
    """Events as core/v1 objects, written through the (dry-run aware) writer."""

    def __init__(self, writer: KubeWriter, instance: str) -> None:
        self.writer, self.instance = writer, instance

    def record(
        self,
        involved: Mapping[str, str],
        reason: str,
        message: str,
        now: float,
        warning: bool,
        *,
        name: str | None = None,
    ) -> None:
        body = event_body(
            involved, reason, message, now, instance=self.instance, warning=warning, name=name
        )
        self.writer.create_event(body["metadata"]["namespace"], body)


EVENT_REASONS = {
    ActionKind.PREEMPT: "GpuReclaimPreempted",
    ActionKind.RESUME: "GpuReclaimResumed",
    ActionKind.RESHAPE: "GpuReclaimReshaped",
}
WARNING_EVENT_REASONS = {Reason.RELEASE_OVERDUE: "GpuReclaimReleaseOverdue"}
NODE_EVENT_REASONS = dict.fromkeys(REFUSALS, "GpuReclaimRaiseRefused")  # Normal Events on nodes
JOB_RESOURCES = {**{w.job_kind: w.resource for w in kinds.WORKLOADS}, JobKind.POD: r.PODS}


def describe(action: Action, dry_run: bool) -> str:
    """The Event message: what was done, why, and the evidence."""
    ev: Evidence = action.evidence
    parts = [f"{'[dry-run] ' if dry_run else ''}{action.kind} {action.target}: {action.reason}"]
    if ev.forecast is not None:
        f = ev.forecast
        parts.append(
            f"forecast idle={f.idle} {wording.odds_text(f)} "
            f"idle_for~{f.predicted_idle_seconds:.0f}s threshold={f.threshold:g} "
            f"samples={f.samples}"
        )
    if ev.for_pending:
        parts.append(f"for pending {ev.for_pending}")
    if ev.for_queue:
        parts.append(f"queue {ev.for_queue}")
    if ev.gpus_freed:
        parts.append(f"frees {count(ev.gpus_freed, 'slots')}")
    if action.kind is ActionKind.RESHAPE:
        parts.append(f"replicas {action.from_replicas} -> {action.to_replicas}")
    if ev.detail:
        parts.append(ev.detail)
    return "; ".join(parts)
