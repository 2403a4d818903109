"""The planner: one cycle's snapshot, forecasts and policy in, a `Plan` of explained actions out.

`plan()` is pure and deterministic: no I/O, no clock, no randomness; the same inputs, in any
order, give the same plan. The controller applies the plan through its actuator (or only logs it
in dry-run), the simulator replays it, and `reclaimer.report.plan_table` renders it for people.

Order of work: a data gate first (metrics older than `maxDataAge`, samples dated after `now`, or
an incomplete snapshot, means no action of any kind this cycle); then the inputs are sorted into
canonical order and the cycle's GPU ledger is built (`capacity`), counting slots still being
released as future free; pending jobs whose room is already in flight are served first from it
(`inflight`); then jobs warned of a stop are held, stopped once due, or their warning withdrawn
(`warning`), and preemption for starved queues (`victims`, `preempt`), whose new stops become
warnings where the policy gives the job's kind or queue a warning period; resumes of jobs the
reclaimer suspended (`resume`) on the slots left over, and time-slice reshapes (`reshape`: the
load rules, and below them the pods that do not fit, `harm`, and whole GPUs for pending
multi-GPU jobs, `handback`).
Contention relief (`contention`) comes first among the stops: a busy reclaimable job time-sliced
with a busy guaranteed one is stopped, its stop counted in the budget of the preemptions after
it. Each stage returns actions and the skips that explain every candidate it left alone; what an
operator must look at (a release overdue) comes back as the plan's `warnings`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import replace
from typing import TypeVar

from reclaimer.decisions import Action, Plan, Reason, Skip
from reclaimer.model import CLOCK_SKEW_TOLERANCE_S, DataQuality, Forecast, PendingDemand, Snapshot
from reclaimer.plan import cluster_queues
from reclaimer.plan.capacity import (
    FreePool,
    Placement,
    Releasing,
    free_slots,
    placements,
    queue_allocation,
    releasing,
    total_slots,
)
from reclaimer.plan.contend import contend
from reclaimer.plan.contention import contended_nodes, plan_contention_relief
from reclaimer.plan.inflight import hold_rooms, rooms_in_flight
from reclaimer.plan.ledger import Ledger, standings
from reclaimer.plan.limits import Budget
from reclaimer.plan.preempt import plan_preemptions
from reclaimer.plan.reshape import Pressure, plan_reshapes
from reclaimer.plan.resume import any_resumable, plan_resumes
from reclaimer.plan.shares import deserved_shares
from reclaimer.plan.victims import Victim, candidates
from reclaimer.plan.warning import hold_warned, schedule
from reclaimer.policy.settings import Policy
from reclaimer.units import format_duration

T = TypeVar("T")

CLUSTER = "*"
"""Skip target for decisions about the whole cycle (stale data, a disabled action kind)."""


def plan(snapshot: Snapshot, forecasts: Mapping[str, Forecast], policy: Policy, now: float) -> Plan:
    """Decide this cycle's preemptions, resumes and reshapes. Pure and deterministic.

    Consumed by the controller's actuator (which applies, or in dry-run only records, each
    action), by the simulator at every control interval, and by `explain` for operators.
    """
    gate = data_gate(snapshot.quality, policy, now)
    if gate is not None:
        return Plan(created_at=now, actions=(), skipped=(gate,))
    snap = canonical(cluster_queues.with_policy(snapshot, policy.kueue))
    where = placements(snap, policy)
    demands = _demands(snap)
    ledger = _ledger(snap, where, demands, policy)
    queues = standings(ledger, demands)
    demands, skips, warnings = hold_rooms(
        demands,
        rooms_in_flight(snap.jobs, ledger.releasing),
        ledger,
        now=now,
        timeout=policy.release_timeout_seconds,
    )
    skips += [Skip(k, Reason.UNSUPPORTED_KIND, why) for k, why in snap.unmanaged.items()]
    actions: list[Action] = []
    victims: list[Victim] = []
    budget = Budget(policy.limits)
    if policy.actions.preempt:
        actions, more = plan_contention_relief(snap, where, ledger, budget, policy=policy, now=now)
        stopped = {a.target for a in actions} | {s.target for s in more}
        victims, screened = candidates(snap, where, forecasts, policy, now)
        victims = [v for v in victims if v.key not in stopped]
        skips += more + [s for s in screened if s.target not in stopped]
        held = hold_warned(
            snap.jobs, demands, victims, screened,
            ledger=ledger, budget=budget, policy=policy, now=now, leave=stopped,
            usage=snap.pod_gpus,
        )  # fmt: skip
        demands, victims = held.demands, held.victims
        actions, skips, warnings = (
            actions + held.actions,
            skips + held.skips,
            warnings + held.warnings,
        )
    else:
        skips.append(Skip(CLUSTER, Reason.DISABLED, "actions.preempt is false"))
    acts, more = plan_preemptions(
        demands,
        victims,
        ledger,
        policy.limits,
        now=now,
        after=policy.reclaim_after_seconds,
        busy_after=policy.reclaim_busy_after_seconds,
        budget=budget,
    )
    actions += schedule(acts, {j.key: j for j in snap.jobs}, policy, now)
    skips += more
    if policy.actions.resume:
        queues_by_name = {q.name: q for q in snap.queues}
        busy_beside = contended_nodes(
            snap, queues_by_name, policy.time_slicing.contention_busy_above
        )
        acts, more = plan_resumes(
            snap.jobs,
            snap.nodes,
            ledger,
            policy,
            now=now,
            last_actions=snap.last_actions,
            contended=busy_beside,
        )
        actions += acts
        skips += more
    else:
        skips.append(Skip(CLUSTER, Reason.DISABLED, "actions.resume is false"))
    if policy.actions.reshape:
        ts, cap = policy.time_slicing, policy.limits.max_reshapes_per_cycle
        found = contend(snap.contention, snap.pods, snap.jobs, snap.queues)
        pressure = Pressure(snap.crashes, demands, policy.reclaim_after_seconds, found)
        acts, more = plan_reshapes(
            snap.nodes,
            snap.pods,
            ts,
            max_per_cycle=cap,
            now=now,
            last_actions=snap.last_actions,
            usage=snap.pod_gpus,
            peaks=snap.memory_peaks,
            pressure=pressure,
        )
        actions += acts
        skips += more
    else:
        skips.append(Skip(CLUSTER, Reason.DISABLED, "actions.reshape is false"))
    return Plan(now, tuple(actions), tuple(skips), tuple(warnings), queues)


def may_resume(snapshot: Snapshot, policy: Policy, now: float) -> bool:
    """Whether `plan` could resume a job now: false when no job the reclaimer holds, out of
    its cool-down and not still releasing, fits the free slots the cycle starts from. Without
    preemption nothing a cycle plans before its resumes frees slots (grants, rooms in flight and
    earlier resumes only take them), so then the plan resumes nothing; with it, a stop may free
    them, and the answer is always yes. Cheap; the replay asks it before its resume-only plans
    among hundreds of pending jobs."""
    if not policy.actions.resume:
        return False
    if policy.actions.preempt:
        return True
    snap = cluster_queues.with_policy(snapshot, policy.kueue)
    released = releasing(snap)
    free = future_free(snap, released)
    return any_resumable(snap.jobs, free, released, policy, now=now, last_actions=snap.last_actions)


def _ledger(
    snap: Snapshot, where: Mapping[str, Placement], demands: list[PendingDemand], policy: Policy
) -> Ledger:
    allocated = queue_allocation(snap.jobs, where)
    requests = dict(allocated)
    for d in demands:
        requests[d.queue] = requests.get(d.queue, 0.0) + d.gpus
    released = releasing(snap)
    return Ledger(
        free=future_free(snap, released),
        releasing=released,
        allocated=dict(allocated),
        running=dict(allocated),
        deserved=deserved_shares(snap.queues, total_slots(snap.nodes), policy, requests),
        queues={q.name: q for q in snap.queues},
    )


def future_free(snap: Snapshot, released: Releasing) -> FreePool:
    """The ledger's free slots at the start of a cycle: free now, plus what is being released
    on nodes that offer the resource."""
    free = free_slots(snap)
    for resource, by_node in released.by_resource.items():
        mine = free.get(resource, {})
        for node, slots in by_node.items():
            if node in mine:
                mine[node] += slots
    return FreePool(free)


def _demands(snap: Snapshot) -> list[PendingDemand]:
    """GPU demand, one per job (the first in canonical order), less jobs the reclaimer holds."""
    held = {j.key for j in snap.jobs if j.suspended and j.suspended_by_reclaimer}
    first: dict[str, PendingDemand] = {}
    for d in snap.pending:
        if d.gpus > 0 and d.job not in held:
            first.setdefault(d.job, d)
    return list(first.values())


def data_gate(quality: DataQuality, policy: Policy, now: float) -> Skip | None:
    """The skip that stops the whole cycle, when metrics are missing, stale, dated after `now`
    (the clocks disagree) or incomplete.

    The one place staleness is decided: the controller gates any plan with it too.
    """
    if quality.metrics_at is None:
        why = "no utilization samples in the last 5 minutes: is the exporter scraped?"
        return Skip(CLUSTER, Reason.STALE_DATA, why)
    age = now - quality.metrics_at
    if -age > CLOCK_SKEW_TOLERANCE_S:
        why = (
            f"a utilization sample is dated {format_duration(-age)} after this controller's"
            f" clock (tolerance {format_duration(CLOCK_SKEW_TOLERANCE_S)}): Prometheus' clock or"
            " this node's is off, so the history read up to now misses the latest minutes"
        )
        return Skip(CLUSTER, Reason.CLOCK_SKEW, why)
    if age > policy.max_data_age_seconds:
        limit = format_duration(policy.max_data_age_seconds)
        return Skip(
            CLUSTER, Reason.STALE_DATA, f"newest metrics {format_duration(age)} old > {limit}"
        )
    if not quality.complete:
        detail = "; ".join(quality.problems) or "snapshot marked incomplete"
        return Skip(CLUSTER, Reason.INCOMPLETE_DATA, detail)
    return None


def canonical(snapshot: Snapshot) -> Snapshot:
    """The snapshot with every collection sorted by key (content breaks ties): order-free input."""
    return replace(
        snapshot,
        queues=_sorted(snapshot.queues, lambda q: q.name),
        jobs=_sorted(snapshot.jobs, lambda j: j.key),
        pods=_sorted(snapshot.pods, lambda p: p.key),
        nodes=_sorted(snapshot.nodes, lambda n: n.name),
        pending=_sorted(snapshot.pending, lambda d: d.job),
        pod_gpus=tuple(sorted(snapshot.pod_gpus, key=repr)),
        crashes=tuple(sorted(snapshot.crashes, key=repr)),
    )


def _sorted(items: Iterable[T], key: Callable[[T], str]) -> tuple[T, ...]:
    out = sorted(items, key=key)
    if len({key(x) for x in out}) < len(out):  # duplicate keys: let the content decide
        out.sort(key=lambda x: (key(x), repr(x)))
    return tuple(out)
