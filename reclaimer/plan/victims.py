"""Which running jobs may be preempted at all this cycle, and in what order of preference.

A job is a candidate victim only as a whole gang, and only when every safety rule passes, checked
cheapest first: its queue is known and reclaimable, it is not opted out (Volcano's
`volcano.sh/preemptable: "false"` or the policy's own annotation, on the job or any of its pods),
no other controller admits it (Kueue would unsuspend it at once) and its controller owner, if any,
is a kind the reclaimer manages (any other would undo the stop), no PodDisruptionBudget selecting
its pods allows fewer disruptions than stopping it would cause, it is not a Volcano Job with one
retry or fewer left (Volcano counts a resume as a retry), it has run for its minimum runtime
(`volcano.sh/cooldown-time`, else the policy's), the reclaimer has not acted on it within the job
cool-down, its recent utilization is known (no samples missing over the last horizon while it held
GPUs: unknown is not idle), and it has a forecast for at least the policy's horizon at no looser
threshold. Each failing job becomes a `Skip` naming the first rule it failed. A job whose forecast
does not say idle with enough confidence is a `Skip` too, unless the policy sets
`reclaimBusyAfter`: then it is a *busy* candidate (its `busy_note` says why), which the preemption
planner offers only to pending jobs that have waited that long, and only when the idle candidates
cannot make room. The forecast reads a day of history; the cycle's per-pod readings
(`Snapshot.pod_gpus`) say what each pod does now, and a pod at or above the threshold now makes
its job busy whatever the forecast says (its note names the pod and its reading), so no job is
stopped as idle minutes after someone came back to it. Candidates are ranked idle first, then
by confidence, then by the least work a preemption would lose, then by lowest priority, then by
key.

With `costAwareStops`, `minConfidence` is not the cut: a forecast at or above `costAwareFloor` makes
an idle candidate carrying the policy's `CostRule`, and the victim search stops it for a pending
gang only when what it frees outweighs what it risks (`reclaimer.plan.stop_cost`).

Confidence can be ranked in bands (`confidenceTieBand`, counted down from 1: with 0.05 the bands
are (0.95, 1], (0.90, 0.95], ...), so that near-equal confidences tie and the work lost decides.
Bands are fixed, not relative to the best candidate, so the ranking stays a total order
independent of who else is a candidate. The default is 0, exact confidence: on the
alibaba-openb replay (40 GPUs, seeds 0-4, default policy) a 0.05 band changed one choice in 61
preemptions, with the same 17 wrongful ones and the same lost work. The planner rarely has two
victims that would each fit (most picks have one candidate); nothing measured supports turning
it on by default.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import cached_property

from reclaimer.decisions import Reason, Skip
from reclaimer.forecast import wording
from reclaimer.model import Forecast, Job, PodGpuUsage, Queue, Snapshot, spares_a_retry
from reclaimer.plan.capacity import Placement, is_opted_out
from reclaimer.plan.stop_cost import CostRule, StopCost, stop_cost
from reclaimer.policy.settings import VOLCANO_COOLDOWN, Policy
from reclaimer.units import format_duration, parse_duration


@dataclass(frozen=True)
class Victim:
    """A job that may be preempted, with what preempting it frees and costs."""

    job: Job
    forecast: Forecast
    placement: Placement
    work_lost_seconds: float
    tie_band: float = 0.0  # the policy's confidenceTieBand
    busy_note: str = ""  # why it is not forecast idle; empty for an idle victim
    cost_rule: CostRule | None = None  # `costAwareStops`: stopped only where it pays

    def stop_cost(self, resource: str, gang_gpus: float) -> StopCost | None:
        """What stopping it for a gang of `gang_gpus` on `resource` frees and risks; None
        without the cost rule."""
        if self.cost_rule is None:
            return None
        freed = min(float(sum(self.placement.on(resource).values())), gang_gpus)
        return stop_cost(
            self.forecast,
            self.cost_rule,
            gpus_freed=freed,
            gpus_held=self.gpus,
            work_lost_seconds=self.work_lost_seconds,
        )

    @property
    def idle(self) -> bool:
        return not self.busy_note

    @cached_property
    def key(self) -> str:
        return self.job.key

    @cached_property
    def gpus(self) -> int:
        return self.placement.gpus

    @property
    def namespace(self) -> str:
        return self.job.namespace

    @property
    def pods_by_node(self) -> Mapping[str, int]:
        return self.placement.pods_by_node

    @cached_property
    def rank(self) -> tuple[bool, float, float, int, str]:
        """Sort key: idle first, most confident band, least work lost, lowest priority, key."""
        band = confidence_band(self.forecast.confidence, self.tie_band)
        return (not self.idle, band, self.work_lost_seconds, self.job.priority, self.job.key)


def confidence_band(confidence: float, width: float) -> float:
    """0 for the top band (1 - width, 1], 1 for the next, ...; -confidence when `width` is 0."""
    if width <= 0:
        return -confidence
    return float(math.floor(round((1.0 - confidence) / width, 9)))


def min_runtime_seconds(job: Job, policy: Policy) -> float:
    """The job's `volcano.sh/cooldown-time` if it parses, else the policy default."""
    raw = job.annotations.get(VOLCANO_COOLDOWN)
    if raw is not None:
        try:
            return parse_duration(raw)
        except ValueError:
            pass
    return policy.min_runtime_seconds


def work_lost_seconds(job: Job, policy: Policy, now: float) -> float:
    """Run time a preemption throws away: since start, or since the last checkpoint."""
    ran = max(0.0, now - job.start_time)
    interval = policy.checkpoint_interval_seconds
    return ran % interval if interval else ran


def safety_skip(
    job: Job,
    queue: Queue | None,
    placement: Placement,
    *,
    policy: Policy,
    now: float,
    last_action: float | None,
) -> Skip | None:
    """The `Skip` for the first safety rule stopping `job` fails (queue reclaimable, opt-outs,
    another controller, PDBs, retries, minimum runtime, cool-down), or None: every stop the
    planner makes (idle, busy or contention relief) passes these first."""
    if queue is None or not queue.reclaimable:
        why = "queue unknown" if queue is None else f"queue {queue.name} is not reclaimable"
        return Skip(job.key, Reason.NOT_RECLAIMABLE, why)
    if is_opted_out(job.annotations, policy) or placement.opted_out:
        return Skip(job.key, Reason.OPTED_OUT, 'preemptable annotation is "false"')
    if job.managed_by:
        return Skip(job.key, Reason.MANAGED_ELSEWHERE, job.managed_by)
    if job.controlled_by:
        return Skip(job.key, Reason.FOREIGN_OWNER, job.controlled_by)
    if job.disruption_block:
        return Skip(job.key, Reason.DISRUPTION_BUDGET, job.disruption_block)
    if job.retries_left is not None and not spares_a_retry(job.retries_left):
        why = f"{job.retries_left} retry left: resuming it would reach maxRetry and fail it"
        return Skip(job.key, Reason.LAST_RETRY, why)
    ran, floor = now - job.start_time, min_runtime_seconds(job, policy)
    if ran < floor:
        return Skip(
            job.key,
            Reason.TOO_YOUNG,
            f"ran {format_duration(max(ran, 0.0))} of minimum {format_duration(floor)}",
        )
    if last_action is not None and now - last_action < policy.job_cooldown_seconds:
        since = format_duration(max(now - last_action, 0.0))
        return Skip(job.key, Reason.COOLING_DOWN, f"acted on {since} ago")
    return None


def screen(
    job: Job,
    queue: Queue | None,
    placement: Placement,
    forecast: Forecast | None,
    *,
    policy: Policy,
    now: float,
    last_action: float | None,
    unknown: str | None = None,
    busy_now: str = "",
) -> Victim | Skip:
    """One running job: a `Victim`, or the `Skip` for the first safety rule it fails.

    `unknown` says why the job's recent utilization cannot be known: it is then never a victim,
    whatever its forecast says (a GPU the exporter cannot read looks idle, and is not).
    `busy_now` (`measured_busy`) says which of its pods is at or above the threshold now: it is
    then busy, whatever its forecast says.
    """
    unsafe = safety_skip(job, queue, placement, policy=policy, now=now, last_action=last_action)
    if unsafe is not None:
        return unsafe
    if unknown is not None:
        return Skip(job.key, Reason.UNKNOWN_USAGE, unknown)
    if forecast is None:
        return Skip(job.key, Reason.NO_FORECAST, "no utilization history")
    problem = _forecast_problem(forecast, policy)
    if problem:
        return Skip(job.key, Reason.NOT_IDLE, problem)
    lost = work_lost_seconds(job, policy, now)
    busy = busy_now or _busy_note(forecast, policy)
    if busy and policy.reclaim_busy_after_seconds is None:
        return Skip(job.key, Reason.NOT_IDLE, busy)
    rule = cost_rule(policy)
    return Victim(job, forecast, placement, lost, policy.confidence_tie_band, busy, rule)


def measured_busy(job: Job, usage: Sequence[PodGpuUsage], threshold: float) -> str:
    """Which of `job`'s pods uses a GPU at or above `threshold` in this cycle's readings (busy
    as the forecast counts a sample), and how much (the busiest); empty when none does or none
    was read."""
    pods = set(job.pods)
    busy = sorted(
        (u.busy, u.pod)
        for u in usage
        if u.pod in pods and u.busy is not None and u.busy >= threshold
    )
    if not busy:
        return ""
    level, pod = busy[-1]
    return f"{pod} is {level:.0%} busy now (idle threshold {threshold:.0%})"


def cost_rule(policy: Policy) -> CostRule | None:
    """The policy's cost rule, or None when `costAwareStops` is off."""
    if not policy.cost_aware_stops:
        return None
    return CostRule(policy.cold_start_seconds, policy.cost_aware_floor)


def _busy_note(f: Forecast, policy: Policy) -> str:
    """Why a usable forecast does not call the job idle; empty when it does."""
    if policy.cost_aware_stops:
        if f.confidence < policy.cost_aware_floor:
            floor = policy.cost_aware_floor
            return f"{wording.odds_text(f)} below costAwareFloor {floor:.2f}"
        return ""
    if not f.idle:
        return f"forecast busy: {wording.odds_text(f)}"
    if f.confidence < policy.min_confidence:
        return f"{wording.odds_text(f)} below minConfidence {policy.min_confidence:.2f}"
    return ""


def _forecast_problem(f: Forecast, policy: Policy) -> str:
    """Why a forecast cannot be used under this policy at all; empty when it can."""
    if f.horizon_seconds < policy.horizon_seconds:
        return f"forecast horizon {format_duration(f.horizon_seconds)} shorter than policy's"
    if f.threshold > policy.threshold:
        return f"forecast threshold {f.threshold:.0%} looser than policy's {policy.threshold:.0%}"
    return ""


def candidates(
    snapshot: Snapshot,
    where: Mapping[str, Placement],
    forecasts: Mapping[str, Forecast],
    policy: Policy,
    now: float,
) -> tuple[list[Victim], list[Skip]]:
    """Every running, unsuspended GPU job screened: victims in rank order, and the skips."""
    queues = {q.name: q for q in snapshot.queues}
    victims: list[Victim] = []
    skips: list[Skip] = []
    for job in snapshot.jobs:
        placement = where.get(job.key)
        if job.suspended or placement is None or placement.gpus <= 0:
            continue
        verdict = screen(
            job,
            queues.get(job.queue),
            placement,
            forecasts.get(job.key),
            policy=policy,
            now=now,
            last_action=snapshot.last_actions.get(job.key),
            unknown=snapshot.unknown_usage.get(job.key),
            busy_now=measured_busy(job, snapshot.pod_gpus, policy.threshold),
        )
        if isinstance(verdict, Victim):
            victims.append(verdict)
        else:
            skips.append(verdict)
    victims.sort(key=lambda v: v.rank)
    return victims, skips
