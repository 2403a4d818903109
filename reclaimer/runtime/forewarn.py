"""The actuator's half of warnings before a stop: write or withdraw the record, tell the owner.

A `warn` action writes the job's scheduled stop (`kube.forewarn`) and then a Warning Event
`GpuReclaimScheduled` on it, with the reason, the evidence and the stop's time. The stop time is
counted from the moment the record is written (rounded up to the second the annotation holds),
never from the plan's older clock, so no stop comes sooner than the period after its Event. A
`cancel` removes the record, then writes a Normal Event `GpuReclaimCancelled` with why. An
owner's keep in force (`KeptByOwner` in the plan's warnings) becomes an Event `GpuReclaimKept`
(Warning when `maxKeep` capped it) once per job and keep: its name is fixed by the job and the
keep's time, so a restarted process that writes it again gets 409 and moves on.
Warnings are not stops: they spend none of the cycle's stop limits, and a failed write is an
`ActionResult` like any other (the next cycle plans the warning again). A written warning or
cancel is also sent to the webhooks of the job's namespace or queue (`runtime.notify`), on the
side: the answer changes nothing here.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Callable, Sequence
from dataclasses import replace

from reclaimer.decisions import Action, ActionKind, ActionResult, Outcome, Reason, Skip
from reclaimer.kube import forewarn
from reclaimer.kube.client import KubeError
from reclaimer.kube.objects import kinds
from reclaimer.kube.write import KubeWriter, NotLeader, rfc3339
from reclaimer.model import ClusterView, Job
from reclaimer.policy.warning import Webhook
from reclaimer.runtime.notify import Notifier, hooks_for
from reclaimer.runtime.settle import Recorder

log = logging.getLogger(__name__)

SCHEDULED = "GpuReclaimScheduled"
CANCELLED = "GpuReclaimCancelled"
KEPT = "GpuReclaimKept"
KEEPS = frozenset({Reason.KEPT_BY_OWNER, Reason.KEEP_CAPPED})


class Forewarner:
    def __init__(
        self,
        writer: KubeWriter,
        events: Recorder,
        clock: Callable[[], float],
        may_write: Callable[[], bool],
        *,
        notifier: Notifier | None = None,
        webhooks: Callable[[], Sequence[Webhook]] = lambda: (),
    ) -> None:
        self.writer, self.events, self.clock, self.may_write = writer, events, clock, may_write
        self.notifier, self.webhooks = notifier, webhooks
        self._kept: set[str] = set()

    def apply(
        self,
        action: Action,
        view: ClusterView,
        message: str,
        failure: Callable[[Action, Exception], ActionResult],
    ) -> ActionResult:
        """Carry out a `warn` or `cancel` and write its Event; a failure is `failure(exc)`."""
        if not self.may_write():
            return ActionResult(action, Outcome.SKIPPED, "not the leader: not acting")
        before = self.writer.writes
        job = next(j for j in view.jobs if j.key == action.target)
        try:
            involved, detail, warning = self._write(action, job)
        except Exception as exc:  # one action never stops the others
            res = failure(action, exc)
            log.info("%s %s: %s", action.kind, action.target, res.detail)
            return replace(res, writes=self.writer.writes - before)
        reason = SCHEDULED if action.kind is ActionKind.WARN else CANCELLED
        try:
            self.events.record(involved, reason, f"{message}; {detail}", self.clock(), warning)
        except (KubeError, NotLeader) as exc:
            log.warning("event for %s %s not recorded: %s", action.kind, action.target, exc)
            detail += f"; event not recorded: {exc}"
        hooks = hooks_for(self.webhooks(), job.namespace, job.queue)
        if self.notifier is not None and hooks and not self.writer.dry_run:
            self.notifier.notify(hooks, job.key, f"{reason}: {message}; {detail}")
        outcome = Outcome.DRY_RUN if self.writer.dry_run else Outcome.APPLIED
        log.info("%s %s %s: %s", outcome, action.kind, action.target, detail)
        return ActionResult(action, outcome, detail, writes=self.writer.writes - before)

    def _write(self, action: Action, job: Job) -> tuple[dict[str, str], str, bool]:
        """(involved object, detail, whether the Event is a Warning)."""
        if action.kind is ActionKind.CANCEL:
            return forewarn.withdraw(self.writer, job), "scheduled stop withdrawn", False
        ev = action.evidence
        now = self.clock()
        stop_at = float(math.ceil(now + ev.warn_seconds))
        obj = forewarn.schedule_stop(
            self.writer,
            job,
            now=now,
            stop_at=stop_at,
            for_pending=ev.for_pending or "",
            reason=str(action.reason),
        )
        return obj, f"stop at {rfc3339(stop_at)}", True

    def keeps(self, warnings: Sequence[Skip], view: ClusterView) -> int:
        """An Event per owner's keep in force, once per job and keep; returns Events written."""
        jobs = {j.key: j for j in view.jobs}
        written = 0
        for w in warnings:
            job = jobs.get(w.target)
            if w.reason not in KEEPS or job is None or job.keep_until is None:
                continue
            name = f"{job.name}.gpu-reclaim-keep-{int(job.keep_until):x}"[:253]
            if name in self._kept or not self.may_write():
                continue
            capped = w.reason is Reason.KEEP_CAPPED
            try:
                self.events.record(
                    kinds.involved_object(job), KEPT, w.detail, self.clock(), capped, name=name
                )
            except KubeError as exc:
                if exc.status != 409:  # 409: an earlier process wrote it
                    log.warning("keep event for %s not recorded: %s", w.target, exc)
                    continue
            except NotLeader:
                continue
            else:
                written += 1
            self._kept.add(name)
        return written
