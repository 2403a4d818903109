"""Warnings before a stop: the owner is told first, and the stop waits out the warning period.

When the preemption planner picks a job whose kind or queue has a warning period (the policy's
`warning:` section), the first cycle does not stop it: `schedule` turns the stop into a `warn`
action, which the actuator writes as a Warning Event and the job's `gpu-reclaim.io/reclaim-after`
record. The record lives in the cluster, so every later cycle, in this process or a restarted one
or a new leader's, reads the same countdown from the snapshot (`Job.warning`), and `hold_warned`
decides, before any new victim is searched for:

- the pending job it was warned for no longer waits, holds its queue's share, or fits free slots
  by now: the warning is withdrawn (`cancel`, `DemandGone`);
- the job is no longer an idle candidate: one of its pods is at or above the idle threshold in
  this cycle's measurements (a forecast over a day may still say idle minutes after a person
  came back), or the forecast, a safety rule or unknown usage now rule it out: withdrawn
  (`cancel`, `BusyAgainDuringWarning` or `NoLongerACandidate`);
- otherwise its slots count as room coming for that pending job, so no second job is warned or
  stopped for the same demand. The job is stopped (`preempt`) at the first cycle at or after its
  stop time, if the warned room then fits the pending job whole (partial room is never made), and
  the cycle's limits allow; until then it is a `ReclaimScheduled` skip with its time left.

An owner's `gpu-reclaim.io/keep-until` moves the stop to that time, at most `maxKeep` after the
scheduled one; a keep in force is a `KeptByOwner` plan warning (an Event, once per keep).
Pure: it reads the snapshot's jobs, the cycle's candidates and ledger.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence, Set
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime

from reclaimer.decisions import Action, ActionKind, Evidence, Reason, Skip
from reclaimer.devices import resource_key
from reclaimer.model import Job, PendingDemand, PodGpuUsage
from reclaimer.plan.capacity import pod_shape
from reclaimer.plan.ledger import Ledger, grant, release
from reclaimer.plan.limits import Budget
from reclaimer.plan.preempt import _queue_refuses
from reclaimer.plan.victims import Victim, measured_busy
from reclaimer.policy.settings import Policy
from reclaimer.policy.warning import WarningPolicy
from reclaimer.units import format_duration

_IF_NOT = "unless it turns busy, its demand goes away, or its owner sets gpu-reclaim.io/keep-until"


def at(t: float) -> str:
    """A time as the annotations write it (RFC 3339, UTC, whole seconds)."""
    return datetime.fromtimestamp(t, tz=UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


@dataclass(frozen=True)
class _Cycle:
    ledger: Ledger
    budget: Budget
    policy: Policy
    now: float


@dataclass
class Held:
    """What `hold_warned` leaves for the preemption planner, and what it decided itself."""

    demands: list[PendingDemand]
    victims: list[Victim]
    actions: list[Action] = field(default_factory=list)
    skips: list[Skip] = field(default_factory=list)
    warnings: list[Skip] = field(default_factory=list)


def stop_time(job: Job, policy: WarningPolicy) -> tuple[float, Skip | None]:
    """When a warned job is stopped, with the owner's keep (capped by `maxKeep`) applied, and
    the plan warning that says so (None when no keep is in force)."""
    assert job.warning is not None
    base, keep = job.warning.stop_at, job.keep_until
    if keep is None or keep <= base:
        return base, None
    cap = base + policy.max_keep_seconds
    if keep <= cap:
        why = f"kept by its owner until {at(keep)} (scheduled stop was {at(base)})"
        return keep, Skip(job.key, Reason.KEPT_BY_OWNER, why)
    limit = format_duration(policy.max_keep_seconds)
    why = f"keep-until {at(keep)} capped at {at(cap)}: maxKeep is {limit} after {at(base)}"
    return cap, Skip(job.key, Reason.KEEP_CAPPED, why)


def hold_warned(
    jobs: Sequence[Job],
    demands: Sequence[PendingDemand],
    victims: Sequence[Victim],
    screened: Sequence[Skip],
    *,
    ledger: Ledger,
    budget: Budget,
    policy: Policy,
    now: float,
    leave: Set[str] = frozenset(),
    usage: Sequence[PodGpuUsage] = (),
) -> Held:
    """Decide each warned job's fate (see the module); mutates `ledger` and `budget`. `leave`:
    jobs stopped earlier in the cycle (contention relief), left alone here; `usage`: the
    cycle's measured per-pod use (`Snapshot.pod_gpus`)."""
    warned = [j for j in jobs if j.warning and not j.suspended and j.key not in leave]
    pending = {d.job: d for d in demands}
    by_key = {v.key: v for v in victims}
    why_not = {s.target: s for s in screened}
    out = Held(list(demands), list(victims))
    groups: dict[str, list[tuple[Job, Victim]]] = {}
    for job in warned:
        assert job.warning is not None
        d = pending.get(job.warning.for_pending)
        if d is None:
            gone = f"{job.warning.for_pending} no longer waits for GPUs"
            out.actions.append(cancel(job, Reason.DEMAND_GONE, gone))
            continue
        v = by_key.get(job.key)
        withdrawn = _busy_now(job, usage, policy.threshold) or _no_longer_idle(
            job, v, why_not.get(job.key)
        )
        if withdrawn is not None:
            out.actions.append(withdrawn)
            continue
        assert v is not None
        groups.setdefault(d.job, []).append((job, v))
    served = {
        key
        for key in sorted(groups)
        if _hold_group(pending[key], groups[key], _Cycle(ledger, budget, policy, now), out)
    }
    settled = {a.target for a in out.actions} | {s.target for s in out.skips}
    out.demands = [d for d in demands if d.job not in served]
    out.victims = [v for v in victims if v.key not in settled]
    return out


def _hold_group(
    d: PendingDemand, group: Sequence[tuple[Job, Victim]], c: _Cycle, out: Held
) -> bool:
    """Hold (or stop, when due) one pending job's warned jobs; whether their room fits it."""
    ledger, budget, now = c.ledger, c.budget, c.now
    pod_gpus, pods = pod_shape(d.gpus, d.min_member)
    resource = resource_key(d.gpus, d.mig)
    refused = _queue_refuses(d, ledger)
    if refused is not None or ledger.fits(resource, pod_gpus, pods):
        why = refused.detail if refused is not None else "it fits free slots by now"
        out.actions += [cancel(j, Reason.DEMAND_GONE, f"{d.job}: {why}") for j, _ in group]
        return False
    for _, v in group:
        release(v, ledger)
    whole = ledger.fits(resource, pod_gpus, pods)
    if whole:
        grant(d, pod_gpus, pods, ledger)
    for job, v in group:
        stop_at, keep = stop_time(job, c.policy.warning)
        if keep is not None:
            out.warnings.append(keep)
        blocked = budget.blocker(v)
        if now >= stop_at and whole and blocked is None:
            budget.take(v)
            out.actions.append(_due(job, v, d, keep))
            continue
        left = f"stops at {at(stop_at)} (in {format_duration(max(stop_at - now, 0.0))})"
        if now >= stop_at:
            left = f"due since {at(stop_at)}, held: " + (
                f"limit {blocked}" if blocked else f"its room alone does not fit {d.job} yet"
            )
        note = f"warned at {at(job.warning.warned_at)} for {d.job}; {left}" if job.warning else ""
        out.skips.append(Skip(job.key, Reason.RECLAIM_SCHEDULED, note))
    names = ", ".join(j.key for j, _ in group)
    room = "reserved for it" if whole else "not enough alone: more room is sought"
    detail = f"room scheduled: {names} warned of a stop for it; {room}"
    out.skips.append(Skip(d.job, Reason.ROOM_IN_FLIGHT, detail))
    return whole


def _busy_now(job: Job, usage: Sequence[PodGpuUsage], threshold: float) -> Action | None:
    """The cancel of a warned job whose pods use a GPU at or above the threshold now: a forecast
    over a day's history may still say idle minutes after a person came back to it."""
    why = measured_busy(job, usage, threshold)
    return cancel(job, Reason.BUSY_AGAIN, why) if why else None


def _no_longer_idle(job: Job, v: Victim | None, screened: Skip | None) -> Action | None:
    """The cancel of a warned job that is no longer an idle candidate, or None."""
    if v is None:
        reason = Reason.BUSY_AGAIN if screened and screened.reason is Reason.NOT_IDLE else None
        why = f"{screened.reason}: {screened.detail}" if screened else "no longer a candidate"
        return cancel(job, reason or Reason.NO_LONGER_CANDIDATE, why)
    warned_idle = job.warning is not None and job.warning.reason != Reason.BUSY_FOR_LONG_STARVED
    if not v.idle and warned_idle:
        return cancel(job, Reason.BUSY_AGAIN, v.busy_note)
    return None


def cancel(job: Job, reason: Reason, why: str) -> Action:
    """Withdraw `job`'s scheduled stop (the actuator removes its record, with an Event)."""
    w = job.warning
    stop = f"the stop scheduled for {at(w.stop_at)} is withdrawn: " if w else ""
    detail = stop + why
    return Action(ActionKind.CANCEL, job.key, reason, Evidence(detail=detail), job_kind=job.kind)


def _due(job: Job, v: Victim, d: PendingDemand, keep: Skip | None) -> Action:
    w = job.warning
    assert w is not None
    reason = Reason(w.reason) if w.reason in Reason.__members__.values() else None
    kept = f"; {keep.detail}" if keep is not None else ""
    detail = (
        f"warned at {at(w.warned_at)} for {d.job}, stop time {at(w.stop_at)} reached{kept}; "
        f"frees {v.gpus} slots for {d.job} in {d.queue}"
    )
    return Action(
        kind=ActionKind.PREEMPT,
        target=job.key,
        reason=reason or Reason.IDLE_FOR_STARVED_QUEUE,
        evidence=Evidence(v.forecast, d.job, d.queue, v.gpus, detail),
        job_kind=job.kind,
    )


def schedule(
    actions: Sequence[Action], jobs: Mapping[str, Job], policy: Policy, now: float
) -> list[Action]:
    """New stops as warnings, for each job whose queue or kind has a warning period."""
    out = []
    for a in actions:
        job = jobs.get(a.target)
        if a.kind is not ActionKind.PREEMPT or job is None:
            out.append(a)
            continue
        seconds = policy.warning.before(job.kind, job.queue)
        if seconds <= 0:
            out.append(a)
            continue
        stop_at = now + seconds
        detail = f"{a.evidence.detail}; stops in {format_duration(seconds)} {_IF_NOT}"
        ev = replace(a.evidence, gpus_freed=0, detail=detail, stop_at=stop_at, warn_seconds=seconds)
        out.append(replace(a, kind=ActionKind.WARN, evidence=ev))
    return out
