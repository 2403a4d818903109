"""The only writer: turns a `Plan` into Kubernetes changes, one action at a time, safely.

For each action: check the cycle's limits and cool-downs again (`action_limits`), make sure this
replica still leads, run the kind's operation (`kube.operations`: the gentlest preemption each kind
allows; a reshape staged over cycles: new key, relabel once projected, cleanup), re-run it once on
a 409 conflict, then record a Kubernetes Event on the object (`runtime.events` holds the recorder,
the reasons and the messages). Dry-run (the default) sends every write with `dryRun=All`, so
admission and PodDisruptionBudget answers are real, and spends the limits the same way. One
action's failure never stops the others and never raises: it becomes an `ActionResult` (404 =
vanished, skipped quietly; 429 = PDB or throttling, skipped, retried next cycle; 5xx and timeouts
= failed). The loop turns results into metrics. A warning before a stop, and its withdrawal, are
`runtime.forewarn`'s. Plan warnings (a release overdue) become Warning Events on the job they name
(`warn`), once per stop; a raise a gate refused becomes a Normal Event on its node, once per node,
reason and reshape.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping, Sequence

from reclaimer.decisions import (
    Action,
    ActionKind,
    ActionResult,
    Outcome,
    Plan,
    Skip,
)
from reclaimer.kube import deactivation, reshaping, stops
from reclaimer.kube import operations as ops
from reclaimer.kube.client import KubeApi, KubeError
from reclaimer.kube.objects import kinds
from reclaimer.kube.objects import resources as r
from reclaimer.kube.objects.timeslicing import TimeSlicingError
from reclaimer.kube.write import KubeWriter, NotLeader
from reclaimer.model import ClusterView, JobKind
from reclaimer.plan.refusals import CycleBudget
from reclaimer.policy.settings import Policy
from reclaimer.runtime.events import (
    EVENT_REASONS,
    JOB_RESOURCES,
    NODE_EVENT_REASONS,
    WARNING_EVENT_REASONS,
    KubeEventRecorder,
    describe,
)
from reclaimer.runtime.forewarn import Forewarner
from reclaimer.runtime.notify import Notifier
from reclaimer.runtime.settle import Recorder, Settler

log = logging.getLogger(__name__)


EventRecorder = Recorder  # how the actuator writes Events (`KubeEventRecorder`)

__all__ = ["EVENT_REASONS", "Actuator", "EventRecorder", "KubeEventRecorder", "describe"]


def _stopped_detail(wk: kinds.WorkloadKind, stopped: bool) -> str:
    if wk.stop is kinds.Stop.NOTEBOOK:
        return f"{kinds.NOTEBOOK_STOPPED} {'set' if stopped else 'removed'}"
    return f"{'.'.join(wk.suspend_path[1:])}={str(stopped).lower()}"


def _always() -> bool:
    return True


class Actuator:
    def __init__(
        self,
        api: KubeApi,
        *,
        clock: Callable[[], float],
        dry_run: bool = True,
        policy: Policy | None = None,
        may_write: Callable[[], bool] = _always,
        events: EventRecorder | None = None,
        identity: str = r.CONTROLLER_NAME,
        device_plugin: r.ConfigMapRef | None = None,
        notifier: Notifier | None = None,
    ) -> None:
        self.writer = KubeWriter(api, dry_run, may_write)
        self.dry_run = dry_run
        self.policy = policy or Policy()
        self.clock = clock
        self.may_write = may_write
        self.identity = identity
        self.device_plugin = device_plugin or r.ConfigMapRef()
        self.events: EventRecorder = events or KubeEventRecorder(self.writer, identity)
        self._warned: set[tuple[str, str, float | None]] = set()
        self.settler = Settler(self.writer, self.events, clock, may_write)
        self.forewarner = Forewarner(
            self.writer,
            self.events,
            clock,
            may_write,
            notifier=notifier,
            webhooks=lambda: self.policy.warning.webhooks,
        )

    def settle(self, view: ClusterView, results: Sequence[ActionResult]) -> list[str]:
        """After `apply`: clear the records of stops that never happened and write the Events
        of stops found without one (`runtime.settle`), leaving the jobs this cycle wrote to."""
        touched = {res.action.target for res in results if res.writes > 0}
        return self.settler.settle(view, touched)

    def warn(self, warnings: Sequence[Skip], view: ClusterView) -> int:
        """A Warning Event on each job a plan warning names, once per job and stop per process
        (the plan repeats a warning every cycle; Events should not), and a Normal Event on each
        node a raise refusal names (`raises.REFUSALS`), once per node, reason and reshape per
        process. Returns Events written."""
        jobs = {j.key: j for j in view.jobs}
        written = self.forewarner.keeps(warnings, view)
        written += self._node_notices([w for w in warnings if w.reason in NODE_EVENT_REASONS], view)
        for w in warnings:
            job, reason = jobs.get(w.target), WARNING_EVENT_REASONS.get(w.reason)
            seen = (w.target, str(w.reason), job.stopped_at if job else None)
            if job is None or reason is None or seen in self._warned or not self.may_write():
                continue
            involved = {
                "apiVersion": JOB_RESOURCES[job.kind].api_version,
                "kind": JOB_RESOURCES[job.kind].kind,
                "name": job.name,
                "namespace": job.namespace,
                "uid": job.uid,
            }
            try:
                self.events.record(involved, reason, w.detail, self.clock(), True)
            except (KubeError, NotLeader) as exc:
                log.warning("warning event for %s not recorded: %s", w.target, exc)
                continue
            self._warned.add(seen)
            written += 1
        return written

    def _node_notices(self, notices: Sequence[Skip], view: ClusterView) -> int:
        nodes = {n.name: n for n in view.nodes}
        written = 0
        for w in notices:
            node = nodes.get(w.target)
            seen = (w.target, str(w.reason), node.last_reshape if node else None)
            if node is None or seen in self._warned or not self.may_write():
                continue
            involved = {"apiVersion": "v1", "kind": "Node", "name": node.name}
            message = f"{w.reason}: {w.detail}"
            try:
                self.events.record(
                    involved, NODE_EVENT_REASONS[w.reason], message, self.clock(), False
                )
            except (KubeError, NotLeader) as exc:
                log.warning("event for node %s not recorded: %s", w.target, exc)
                continue
            self._warned.add(seen)
            written += 1
        return written

    def apply(self, plan: Plan | Sequence[Action], view: ClusterView) -> list[ActionResult]:
        """Run a plan (a `Plan` or its actions) against the cluster; one result per action."""
        actions = plan.actions if isinstance(plan, Plan) else plan
        budget = CycleBudget(self.policy, view, self.clock())
        return [self._one(action, view, budget) for action in actions]

    def _one(self, action: Action, view: ClusterView, budget: CycleBudget) -> ActionResult:
        if action.kind in (ActionKind.WARN, ActionKind.CANCEL):  # not stops: no stop limits
            message = describe(action, self.dry_run)
            return self.forewarner.apply(action, view, message, self._failure)
        refusal = budget.refusal(action)
        if refusal is not None:
            return ActionResult(action, Outcome.SKIPPED, refusal.detail, refusal.reason)
        if not self.may_write():
            return ActionResult(action, Outcome.SKIPPED, "not the leader: not acting")
        before = self.writer.writes
        now = self.clock()
        try:
            involved, detail = self._with_conflict_retry(action, view, now)
        except Exception as exc:  # one action never stops the others
            result = self._failure(action, exc)
            log.log(
                logging.WARNING if result.outcome is Outcome.FAILED else logging.INFO,
                "%s %s: %s",
                action.kind,
                action.target,
                result.detail,
            )
            return ActionResult(**{**result.__dict__, "writes": self.writer.writes - before})
        budget.spend(action)
        detail = self._record_event(action, involved, now, detail)
        outcome = Outcome.DRY_RUN if self.dry_run else Outcome.APPLIED
        log.info("%s %s %s: %s", outcome, action.kind, action.target, detail)
        return ActionResult(action, outcome, detail, writes=self.writer.writes - before)

    def _with_conflict_retry(
        self, action: Action, view: ClusterView, now: float
    ) -> tuple[dict[str, str], str]:
        try:
            return self._execute(action, view, now)
        except KubeError as exc:
            if exc.status != 409:
                raise
            log.info("%s %s: conflict, re-reading and retrying once", action.kind, action.target)
            involved, detail = self._execute(action, view, now)
            return involved, f"{detail} (after a conflict)"

    def _failure(self, action: Action, exc: Exception) -> ActionResult:
        if isinstance(exc, ops.Unconfirmed):
            return ActionResult(action, Outcome.FAILED, f"not confirmed: {exc}", None, exc.status)
        if isinstance(exc, ops.Precondition | NotLeader):
            return ActionResult(action, Outcome.SKIPPED, str(exc))
        if isinstance(exc, KubeError):
            if exc.status == 404:
                return ActionResult(action, Outcome.SKIPPED, f"{action.target} vanished", None, 404)
            if exc.status == 429:
                why = "blocked by a PodDisruptionBudget or throttled; retrying next cycle"
                return ActionResult(action, Outcome.SKIPPED, f"{why}: {exc.message}", None, 429)
            if exc.status == 403 and self.dry_run:
                # The dry-run RBAC grants no write this kind needs: that is the operator's choice
                # (the enforce overlay grants it), not a failure of the action.
                why = "not permitted by this service account's RBAC (granted in enforce mode)"
                return ActionResult(action, Outcome.SKIPPED, f"{why}: {exc.message}", None, 403)
            return ActionResult(action, Outcome.FAILED, str(exc), None, exc.status)
        if isinstance(exc, TimeSlicingError):
            return ActionResult(action, Outcome.FAILED, f"device-plugin config: {exc}")
        log.exception("unexpected error applying %s %s", action.kind, action.target)
        return ActionResult(action, Outcome.FAILED, f"unexpected {type(exc).__name__}: {exc}")

    def _record_event(
        self, action: Action, involved: Mapping[str, str], now: float, detail: str
    ) -> str:
        # a stop's Event is named after its record, so a later process can tell it was written
        stop = action.kind is ActionKind.PREEMPT
        name = stops.event_name(involved["name"], now) if stop else None
        message = describe(action, self.dry_run)
        try:
            self.events.record(involved, EVENT_REASONS[action.kind], message, now, False, name=name)
        except (KubeError, NotLeader) as exc:
            log.warning("event for %s %s not recorded: %s", action.kind, action.target, exc)
            return f"{detail}; event not recorded: {exc}"
        if name is not None and not self.dry_run:
            self.settler.recorded.add(name)
        return detail

    def _execute(self, action: Action, view: ClusterView, now: float) -> tuple[dict[str, str], str]:
        w = self.writer
        if action.kind is ActionKind.RESHAPE:
            return self._reshape(action, now)
        job = next(j for j in view.jobs if j.key == action.target)  # checked by the budget
        preempt = action.kind is ActionKind.PREEMPT
        room_for = action.evidence.for_pending
        record = (
            ops.suspend_record(self.identity, now, str(action.reason), room_for)
            if preempt
            else ops.resume_record(now)
        )
        pods = [p for p in view.pods if p.job == job.key]
        if job.kueue is not None:  # Kueue owns the job's suspend: its Workload is the door
            deactivation.set_active(w, job, not preempt, record, pods)
            done = f"Workload {job.kueue.name} spec.active={str(not preempt).lower()}"
            return kinds.involved_object(job), done
        wk = kinds.BY_JOB_KIND.get(job.kind)
        if wk is not None and wk.stop in (kinds.Stop.SUSPEND, kinds.Stop.NOTEBOOK):
            obj = ops.set_suspended(w, job, preempt, record, pods)
            return ops.involved(obj, wk.resource), _stopped_detail(wk, preempt)
        if job.kind is JobKind.VOLCANO_JOB:
            obj, note = ops.volcano_command(
                w, job, preempt, record, describe(action, self.dry_run), pods=pods
            )
            done = "AbortJob" if preempt else "ResumeJob"
            return ops.involved(obj, r.VOLCANO_JOBS), f"{done} ({note})" if note else done
        if not preempt:
            raise ops.Precondition("a bare pod cannot be resumed; its owner recreates it")
        obj = ops.evict_bare_pod(w, job, now, str(action.reason), room_for=room_for, pods=pods)
        return ops.involved(obj, r.PODS), "evicted"

    def _reshape(self, action: Action, now: float) -> tuple[dict[str, str], str]:
        if action.to_replicas is None:
            raise ops.Precondition("reshape without target replicas")
        node_obj, key, detail = reshaping.reshape_node(
            self.writer,
            self.device_plugin,
            action.target,
            from_replicas=action.from_replicas,
            to_replicas=action.to_replicas,
            now=now,
            projection=self.policy.time_slicing.projection_delay_seconds,
            reason=str(action.reason),
        )
        pointed = {action.target: key} if self.dry_run else {}
        try:
            removed = reshaping.clean_unused_keys(self.writer, self.device_plugin, pointed)
        except (KubeError, NotLeader) as exc:  # leftovers are harmless; next reshape retries
            detail += f"; unused keys not cleaned: {exc}"
        else:
            if removed:
                detail += f"; removed unused keys {', '.join(removed)}"
        return ops.involved(node_obj, r.NODES), detail
