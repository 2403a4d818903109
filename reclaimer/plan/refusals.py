"""The limits and cool-downs the actuator enforces on its own (defense in depth). Pure.

The planner already respects the policy; the actuator checks again, action by action, because it
is the last step before the cluster changes and may be handed a plan built from other inputs.
One `CycleBudget` lives for one `Actuator.apply` call; dry-run spends it the same way, so a
dry-run shows exactly what applying would do. Preemptions are counted by the planner's own
`budget.Budget` (one counter for both), over the job's bound pods as the planner sees them;
resumes, reshapes, cool-downs, opt-outs and the queue (a job of a queue that is not reclaimable,
or unknown, is never stopped) are checked here. Refusals carry the model's `Reason`.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

from reclaimer.decisions import Action, ActionKind, Reason
from reclaimer.model import ClusterView, Job
from reclaimer.plan.capacity import is_opted_out
from reclaimer.plan.limits import Budget, Taken
from reclaimer.policy.settings import Policy


@dataclass(frozen=True)
class Refusal:
    reason: Reason
    detail: str


def opted_out(job: Job, view: ClusterView, policy: Policy) -> bool:
    """Volcano's or the policy's preemptable annotation says "false", on the job or a pod."""
    pods = {p.key: p for p in view.pods}
    maps = [job.annotations] + [pods[k].annotations for k in job.pods if k in pods]
    return any(is_opted_out(m, policy) for m in maps)


@dataclass
class CycleBudget:
    policy: Policy
    view: ClusterView
    now: float
    done: Counter[ActionKind] = field(default_factory=Counter)
    touched: set[str] = field(default_factory=set)
    preemptions: Budget = field(init=False)

    def __post_init__(self) -> None:
        self.preemptions = Budget(self.policy.limits)

    def _job(self, key: str) -> Job | None:
        return next((j for j in self.view.jobs if j.key == key), None)

    def _taken(self, job: Job) -> Taken:
        """What stopping `job` takes, counted over its bound pods as the planner counts them."""
        mine = set(job.pods)
        bound = [p for p in self.view.pods if p.key in mine and not p.releasing]
        nodes = Counter(p.node for p in bound if p.node is not None)
        return Taken(job.namespace, sum(p.gpus for p in bound if p.node), nodes)

    def _cooling(self, target: str, cooldown: float, extra: float | None = None) -> Refusal | None:
        times = [t for t in (self.view.last_actions.get(target), extra) if t is not None]
        if times and self.now < max(times) + cooldown:
            until = max(times) + cooldown
            return Refusal(
                Reason.COOLING_DOWN, f"{target} cooling down for {until - self.now:.0f}s"
            )
        return None

    def refusal(self, action: Action) -> Refusal | None:
        """Why `action` may not run now, or None when it may."""
        enabled = {
            ActionKind.PREEMPT: self.policy.actions.preempt,
            ActionKind.RESUME: self.policy.actions.resume,
            ActionKind.RESHAPE: self.policy.actions.reshape,
        }[action.kind]
        if not enabled:
            return Refusal(Reason.LIMIT_REACHED, f"{action.kind} actions are disabled by policy")
        if action.target in self.touched:
            return Refusal(Reason.LIMIT_REACHED, f"{action.target} already acted on this cycle")
        if action.kind is ActionKind.RESHAPE:
            return self._reshape_refusal(action)
        job = self._job(action.target)
        if job is None:
            return Refusal(Reason.NO_FIT, f"{action.target} is not in the snapshot")
        cooling = self._cooling(job.key, self.policy.job_cooldown_seconds)
        if cooling is not None:
            return cooling
        if action.kind is ActionKind.RESUME:
            return self._resume_refusal(job)
        return self._preempt_refusal(job)

    def _resume_refusal(self, job: Job) -> Refusal | None:
        if not job.suspended_by_reclaimer:
            return Refusal(Reason.OPTED_OUT, f"{job.key} was not suspended by the reclaimer")
        if self.done[ActionKind.RESUME] >= self.policy.limits.max_resumes_per_cycle:
            return Refusal(Reason.LIMIT_REACHED, "maxResumesPerCycle reached")
        return None

    def _preempt_refusal(self, job: Job) -> Refusal | None:
        queue = next((q for q in self.view.queues if q.name == job.queue), None)
        if queue is None or not queue.reclaimable:  # a guaranteed job is never stopped
            why = "unknown" if queue is None else "not reclaimable"
            return Refusal(Reason.NOT_RECLAIMABLE, f"{job.key}: queue {job.queue!r} is {why}")
        if opted_out(job, self.view, self.policy):
            return Refusal(Reason.OPTED_OUT, f"{job.key} is marked not preemptable")
        limit = self.preemptions.blocker(self._taken(job))
        return None if limit is None else Refusal(Reason.LIMIT_REACHED, f"{limit} reached")

    def _reshape_refusal(self, action: Action) -> Refusal | None:
        node = next((n for n in self.view.nodes if n.name == action.target), None)
        if node is None:
            return Refusal(Reason.NO_FIT, f"node {action.target} is not in the snapshot")
        ts = self.policy.time_slicing
        to = action.to_replicas
        if to is None or not 1 <= to <= ts.max_replicas:
            return Refusal(Reason.LIMIT_REACHED, f"replicas {to} outside 1..{ts.max_replicas}")
        cooling = self._cooling(node.name, ts.node_cooldown_seconds, node.last_reshape)
        if cooling is not None:
            return cooling
        if self.done[ActionKind.RESHAPE] >= self.policy.limits.max_reshapes_per_cycle:
            return Refusal(Reason.LIMIT_REACHED, "maxReshapesPerCycle reached")
        return None

    def spend(self, action: Action) -> None:
        """Count an action that was applied (or would have been, in dry-run)."""
        self.done[action.kind] += 1
        self.touched.add(action.target)
        job = self._job(action.target)
        if action.kind is ActionKind.PREEMPT and job is not None:
            self.preemptions.take(self._taken(job))
