"""Preemption planning: idle gangs out, only for starved demand that the freed slots really fit.

Pending jobs are served in order: most starved queue first (allocated / deserved), then queue
priority, job priority, age. For each one, whose queue is still below its deserved share (and under
its capability): if the free slots already hold it, its slots are reserved and nothing is
preempted; if it has waited less than `reclaimAfter`, it waits on (room usually frees itself
sooner, and a victim would lose its work for little); otherwise victims come from the other queues'
ranked candidates (see `victims`), within the cycle's budget and never taking a queue below its
guarantee. The search for victims is in `search`. A job is preempted only when the whole pending
gang fits; partial room is never made. Freed slots are reserved for the job so the next pending job
cannot count them twice. Every pending job left unserved, and every candidate left standing, gets a
`Skip` with its reason.
"""

from __future__ import annotations

from collections.abc import Sequence

from reclaimer.decisions import Action, ActionKind, Evidence, Reason, Skip
from reclaimer.devices import amount, count, is_mixed, resource_key
from reclaimer.model import PendingDemand
from reclaimer.plan.capacity import pod_shape
from reclaimer.plan.ledger import Ledger, demand_order, grant, release
from reclaimer.plan.limits import Budget
from reclaimer.plan.search import Search, idle_note
from reclaimer.plan.victims import Victim
from reclaimer.policy.settings import Limits
from reclaimer.units import format_duration


def plan_preemptions(
    demands: Sequence[PendingDemand],
    victims: Sequence[Victim],
    ledger: Ledger,
    limits: Limits,
    *,
    now: float = 0.0,
    after: float = 0.0,
    busy_after: float | None = None,
    budget: Budget | None = None,
) -> tuple[list[Action], list[Skip]]:
    """Serve `demands` in order, preempting from `victims` (ranked); mutates `ledger`.

    A pending job takes victims only once it has waited `after` seconds by `now` (until then
    it stays unserved, so it still holds resumes back). Busy victims are offered only to a
    pending job that has waited `busy_after` seconds, and only once the idle victims alone
    cannot make room for it. `budget` is the cycle's, when earlier stops already spent some.
    """
    search = Search(ledger, budget if budget is not None else Budget(limits))
    idle = [v for v in victims if v.idle]
    actions: list[Action] = []
    skips: list[Skip] = []
    for d in demand_order(demands, ledger):
        why_not = _queue_refuses(d, ledger)
        if why_not is not None:
            skips.append(why_not)
            continue
        pod_gpus, pods = pod_shape(d.gpus, d.min_member)
        resource = resource_key(d.gpus, d.mig)
        if is_mixed(resource):
            skips.append(_mixed_skip(d, resource))
            continue
        if ledger.fits(resource, pod_gpus, pods):
            skips.append(_fits_skip(d, resource, pod_gpus, pods, ledger))
            grant(d, pod_gpus, pods, ledger)
            continue
        if now - d.since < after:
            ledger.unserved.append(d)
            skips.append(_waited_briefly(d, now, after))
            continue
        waited_out = busy_after is not None and now - d.since >= busy_after
        picked = search.find(d, idle, False)
        if isinstance(picked, Skip) and waited_out:
            picked = search.find(d, victims, True)
        if isinstance(picked, Skip):
            ledger.unserved.append(d)
            skips.append(picked)
            continue
        search.memo.forget({v.job.queue for v in picked})
        for v in picked:
            search.budget.take(v)
            search.chosen.add(v.key)
            actions.append(_preempt_action(v, d, ledger, now - d.since))
            release(v, ledger)
        grant(d, pod_gpus, pods, ledger)
    skips += [search.left_standing(v) for v in victims if v.key not in search.chosen]
    return actions, skips


def _fits_skip(d: PendingDemand, resource: str, pod_gpus: int, pods: int, ledger: Ledger) -> Skip:
    shape = f"{pods}x{amount(pod_gpus, resource)}"
    if ledger.fits_now(resource, pod_gpus, pods):
        return Skip(d.job, Reason.FITS_FREE, f"{shape} fit free slots")
    held = sum(ledger.releasing.by_resource.get(resource, {}).values())
    detail = f"{shape} fit once the {amount(held, resource)} being released are free"
    return Skip(d.job, Reason.ROOM_IN_FLIGHT, detail)


def _mixed_skip(d: PendingDemand, resource: str) -> Skip:
    """A gang asking for several device resources: the fit rule is per resource, so no room is
    made for it (the scheduler still places it where all of them are free)."""
    detail = f"asks for {resource.replace('+', ' and ')}: room is made for one device resource"
    return Skip(d.job, Reason.NO_FIT, detail)


def _queue_refuses(d: PendingDemand, ledger: Ledger) -> Skip | None:
    allocated = ledger.allocated.get(d.queue, 0.0)
    deserved = ledger.deserved.get(d.queue, 0.0)
    if allocated >= deserved:
        return Skip(d.job, Reason.QUEUE_AT_SHARE, f"{d.queue} holds {allocated:g}/{deserved:g}")
    return ledger.over_capability(d.job, d.queue, d.gpus)


def _waited_briefly(d: PendingDemand, now: float, after: float) -> Skip:
    waited = format_duration(max(now - d.since, 0.0))
    detail = f"waited {waited} of reclaimAfter {format_duration(after)}"
    return Skip(d.job, Reason.WAITED_BRIEFLY, detail)


def _preempt_action(v: Victim, d: PendingDemand, ledger: Ledger, waited: float) -> Action:
    allocated = ledger.allocated.get(d.queue, 0.0)
    deserved = ledger.deserved.get(d.queue, 0.0)
    freed = "; ".join(
        f"{amount(sum(by_node.values()), r)} ({', '.join(f'{n}:{g}' for n, g in by_node.items())})"
        for r, by_node in v.placement.resources.items()
    )
    why = idle_note(v)
    cost = v.stop_cost(resource_key(d.gpus, d.mig), d.gpus)
    if cost is not None and v.idle:
        why = f"{why}; {cost.text()}"
    if not v.idle:
        why = f"{v.busy_note}, taken because {d.job} has waited {format_duration(waited)}"
    detail = (
        f"{why}; frees {freed} for {d.job} "
        f"({amount(d.gpus, resource_key(d.gpus, d.mig))}, {count(d.min_member, 'pods')}) "
        f"in {d.queue} at {allocated:g}/{deserved:g}; "
        f"loses {format_duration(v.work_lost_seconds)} of work"
    )
    return Action(
        kind=ActionKind.PREEMPT,
        target=v.key,
        reason=Reason.IDLE_FOR_STARVED_QUEUE if v.idle else Reason.BUSY_FOR_LONG_STARVED,
        evidence=Evidence(v.forecast, d.job, d.queue, v.gpus, detail),
        job_kind=v.job.kind,
    )
