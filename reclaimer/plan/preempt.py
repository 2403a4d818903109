"""Preemption planning: idle gangs out, only for starved demand that the freed slots really fit.

Pending jobs are served in order: most starved queue first (allocated / deserved), then queue
priority, job priority, age. For each one, whose queue is still below its deserved share (and
under its capability): if the free slots already hold it, its slots are reserved and nothing is
preempted; if it has waited less than `reclaimAfter`, it waits on (room usually frees itself
sooner, and a victim would lose its work for little); otherwise victims come from the other
queues' ranked candidates (see `victims`), within the cycle's budget and never taking a queue
below its guarantee. Selection is greedy on
pods gained per node (`free // pod_size`), each victim's gain capped at what is still missing so
that among victims that would each suffice the most confidently idle wins; then victims the fit
no longer needs are dropped again, which keeps the set small. A job is preempted only when the
whole pending gang fits; partial room is never made. Freed slots are reserved for the job so
the next pending job cannot count them twice. Every pending job left unserved, and every
candidate left standing, gets a `Skip` with its reason. Searches are memoised between pending
jobs (see `_Memo`) so that thousands of pending jobs do not each rescan every candidate.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace

from reclaimer.model import (
    Action,
    ActionKind,
    Evidence,
    PendingDemand,
    Queue,
    Reason,
    Skip,
)
from reclaimer.plan.capacity import FreeSlots, Releasing, pod_shape
from reclaimer.plan.limits import Budget
from reclaimer.plan.victims import Victim
from reclaimer.policy.settings import Limits
from reclaimer.units import format_duration


@dataclass
class _Memo:
    """Victim searches reusable from one pending job to the next.

    Between preemptions, free slots plus usable victims only shrink: grants reserve slots, the
    budget only tightens, guarantees only bind harder. So a (queue, pod size, pods) that found no
    room finds none later, and a queue's pool only loses members (it is re-filtered, marked
    stale, after each preemption). The exception is a queue whose own jobs were just preempted:
    their slots were never in its pool, so everything known about that queue is forgotten.
    """

    no_room: dict[tuple[str, int, int, bool], Skip] = field(default_factory=dict)
    pools: dict[tuple[str, bool], list[Victim]] = field(default_factory=dict)
    stale: set[tuple[str, bool]] = field(default_factory=set)

    def forget(self, queues: set[str]) -> None:
        self.no_room = {k: v for k, v in self.no_room.items() if k[0] not in queues}
        self.pools = {k: p for k, p in self.pools.items() if k[0] not in queues}
        self.stale = set(self.pools)


@dataclass
class Ledger:
    """The cycle's working state: free slots per node and slots per queue, as planned so far.

    `free` is future free: slots no bound pod holds plus slots being released (`releasing`), the
    room a stop already under way will give back.
    """

    free: FreeSlots
    allocated: dict[str, float]  # running plus granted to pending jobs this cycle
    running: dict[str, float]  # running now, less what this cycle preempts (for guarantees)
    deserved: Mapping[str, float]
    queues: Mapping[str, Queue]
    unserved: list[PendingDemand] = field(default_factory=list)
    releasing: Releasing = field(default_factory=lambda: Releasing({}, {}))

    def fits_now(self, pod_gpus: int, pods: int) -> bool:
        """Whether the pods fit what is free already, releasing slots left out."""
        less = {n: -g for n, g in self.releasing.by_node.items()}
        return self.free.fit_count(pod_gpus, less) >= pods

    def over_capability(self, target: str, queue: str, gpus: int) -> Skip | None:
        """The skip for `target` when `gpus` more slots would take `queue` past its capability."""
        allocated = self.allocated.get(queue, 0.0)
        q = self.queues.get(queue)
        if q is None or q.capability_gpus is None or allocated + gpus <= q.capability_gpus:
            return None
        detail = f"{queue}: {allocated:g}+{gpus} > capability {q.capability_gpus:g}"
        return Skip(target, Reason.QUEUE_AT_CAPABILITY, detail)


def demand_order(demands: Iterable[PendingDemand], ledger: Ledger) -> list[PendingDemand]:
    """Most starved queue first, then queue priority, job priority, waiting longest, key."""

    def key(d: PendingDemand) -> tuple[float, int, int, float, str]:
        deserved = ledger.deserved.get(d.queue, 0.0)
        share = ledger.allocated.get(d.queue, 0.0) / deserved if deserved > 0 else float("inf")
        q = ledger.queues.get(d.queue)
        return (share, -(q.priority if q else 0), -d.priority, d.since, d.job)

    return sorted(demands, key=key)


def plan_preemptions(
    demands: Sequence[PendingDemand],
    victims: Sequence[Victim],
    ledger: Ledger,
    limits: Limits,
    *,
    now: float = 0.0,
    after: float = 0.0,
    busy_after: float | None = None,
) -> tuple[list[Action], list[Skip]]:
    """Serve `demands` in order, preempting from `victims` (ranked); mutates `ledger`.

    A pending job takes victims only once it has waited `after` seconds by `now` (until then
    it stays unserved, so it still holds resumes back). Busy victims are offered only to a
    pending job that has waited `busy_after` seconds, and only once the idle victims alone
    cannot make room for it.
    """
    search = _Search(ledger, Budget(limits))
    idle = [v for v in victims if v.idle]
    actions: list[Action] = []
    skips: list[Skip] = []
    for d in demand_order(demands, ledger):
        why_not = _queue_refuses(d, ledger)
        if why_not is not None:
            skips.append(why_not)
            continue
        pod_gpus, pods = pod_shape(d.gpus, d.min_member)
        if ledger.free.fit_count(pod_gpus) >= pods:
            skips.append(_fits_skip(d, pod_gpus, pods, ledger))
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
            _release(v, ledger)
        grant(d, pod_gpus, pods, ledger)
    skips += [search.left_standing(v) for v in victims if v.key not in search.chosen]
    return actions, skips


@dataclass
class _Search:
    """Victim searches of one cycle: the budget, who is chosen, and what is memoised."""

    ledger: Ledger
    budget: Budget
    chosen: set[str] = field(default_factory=set)
    held_back: dict[str, Skip] = field(default_factory=dict)
    memo: _Memo = field(default_factory=_Memo)

    def find(self, d: PendingDemand, victims: Sequence[Victim], busy: bool) -> list[Victim] | Skip:
        """Victims to preempt for `d`, or the skip saying why none make room."""
        pod_gpus, pods = pod_shape(d.gpus, d.min_member)
        shape = (d.queue, pod_gpus, pods, busy)
        if shape in self.memo.no_room:
            return replace(self.memo.no_room[shape], target=d.job)
        key = (d.queue, busy)
        known = self.memo.pools.get(key)
        if known is None or key in self.memo.stale:
            candidates = victims if known is None else known
            known = _pool(
                d,
                candidates,
                self.chosen,
                self.ledger,
                budget=self.budget,
                held_back=self.held_back,
            )
            self.memo.pools[key] = known
            self.memo.stale.discard(key)
        picked = _pick(known, self.ledger.free, pod_gpus, pods, self.budget)
        if picked is None:
            self.memo.no_room[shape] = _unserved_skip(d, known, self.budget, busy)
            return self.memo.no_room[shape]
        return picked

    def left_standing(self, v: Victim) -> Skip:
        if not v.idle:
            return Skip(v.key, Reason.NOT_IDLE, v.busy_note)
        return self.held_back.get(v.key) or Skip(v.key, Reason.NO_DEMAND, _idle_note(v))


def _fits_skip(d: PendingDemand, pod_gpus: int, pods: int, ledger: Ledger) -> Skip:
    if ledger.fits_now(pod_gpus, pods):
        return Skip(d.job, Reason.FITS_FREE, f"{pods}x{pod_gpus} GPUs fit free slots")
    held = sum(ledger.releasing.by_node.values())
    detail = f"{pods}x{pod_gpus} GPUs fit once the {held} GPUs being released are free"
    return Skip(d.job, Reason.ROOM_IN_FLIGHT, detail)


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


def _release(v: Victim, ledger: Ledger) -> None:
    """Book a chosen victim's slots as free and its queue's allocation as gone."""
    for node, gpus in v.placement.gpus_by_node.items():
        ledger.free.add(node, gpus)
    ledger.allocated[v.job.queue] = ledger.allocated.get(v.job.queue, 0.0) - v.gpus
    ledger.running[v.job.queue] = ledger.running.get(v.job.queue, 0.0) - v.gpus


def grant(d: PendingDemand, pod_gpus: int, pods: int, ledger: Ledger) -> None:
    ledger.free.reserve(pod_gpus, pods)
    ledger.allocated[d.queue] = ledger.allocated.get(d.queue, 0.0) + d.gpus


def _pool(
    d: PendingDemand,
    victims: Sequence[Victim],
    chosen: set[str],
    ledger: Ledger,
    *,
    budget: Budget,
    held_back: dict[str, Skip],
) -> list[Victim]:
    """Victims usable for `d` now; records why the others are held back."""
    if budget.exhausted():
        return []
    pool: list[Victim] = []
    for v in victims:
        if v.key in chosen or v.job.queue == d.queue:
            continue
        limit = budget.blocker(v)
        if limit is not None:
            held_back[v.key] = Skip(v.key, Reason.LIMIT_REACHED, limit)
            continue
        q = ledger.queues.get(v.job.queue)
        guarantee = q.guarantee_gpus if q else 0.0
        if ledger.running.get(v.job.queue, 0.0) - v.gpus < guarantee:
            detail = f"{v.job.queue} would drop below its guarantee of {guarantee:g}"
            held_back.setdefault(v.key, Skip(v.key, Reason.BELOW_GUARANTEE, detail))
            continue
        pool.append(v)
    return pool


def _gain(v: Victim, free: FreeSlots, extra: Mapping[str, int], pod_gpus: int) -> int:
    gain = 0
    for node, gpus in v.placement.gpus_by_node.items():
        before = free.get(node) + extra.get(node, 0)
        gain += max(0, before + gpus) // pod_gpus - max(0, before) // pod_gpus
    return gain


def _pick(
    pool: Sequence[Victim], free: FreeSlots, pod_gpus: int, pods: int, budget: Budget
) -> list[Victim] | None:
    """Fewest, most confidently idle victims whose freed slots fit `pods` x `pod_gpus`."""
    missing = pods - free.fit_count(pod_gpus)
    if not pool or free.fit_count(pod_gpus, _freed(pool)) < pods:
        return None  # even every usable victim together would not do
    gains = [(min(_gain(v, free, {}, pod_gpus), missing), v) for v in pool]
    first = [v for g, v in sorted(gains, key=lambda gv: (-gv[0], gv[1].rank)) if g > 0]
    # Victims that free less than a pod alone can still complete one together: try them last.
    rest = [v for g, v in gains if g <= 0]
    alone = {v.key for v in first}
    extra: dict[str, int] = {}
    trial = budget.copy()
    picked: list[Victim] = []
    for v in first + rest:
        if missing <= 0:
            break
        gain = _gain(v, free, extra, pod_gpus)
        if (gain <= 0 and v.key in alone) or trial.blocker(v) is not None:
            continue
        picked.append(v)
        trial.take(v)
        missing -= gain
        for node, gpus in v.placement.gpus_by_node.items():
            extra[node] = extra.get(node, 0) + gpus
    if missing > 0:
        return None
    return _prune(picked, free, pod_gpus, pods)


def _freed(victims: Iterable[Victim]) -> dict[str, int]:
    out: dict[str, int] = {}
    for v in victims:
        for node, gpus in v.placement.gpus_by_node.items():
            out[node] = out.get(node, 0) + gpus
    return out


def _prune(picked: list[Victim], free: FreeSlots, pod_gpus: int, pods: int) -> list[Victim]:
    """Drop victims (least preferred first) the fit does not need."""
    kept = list(picked)
    for v in sorted(picked, key=lambda x: x.rank, reverse=True):
        rest = [k for k in kept if k is not v]
        if free.fit_count(pod_gpus, _freed(rest)) >= pods:
            kept = rest
    return kept


def _unserved_skip(d: PendingDemand, pool: Sequence[Victim], budget: Budget, busy: bool) -> Skip:
    if budget.exhausted():
        return Skip(d.job, Reason.LIMIT_REACHED, "cycle's preemption budget is spent")
    pod_gpus, pods = pod_shape(d.gpus, d.min_member)
    usable = "usable job(s), idle or busy" if busy else "usable idle job(s)"
    return Skip(
        d.job,
        Reason.NO_FIT,
        f"{pods}x{pod_gpus} GPUs do not fit free slots plus {len(pool)} {usable}",
    )


def _preempt_action(v: Victim, d: PendingDemand, ledger: Ledger, waited: float) -> Action:
    allocated = ledger.allocated.get(d.queue, 0.0)
    deserved = ledger.deserved.get(d.queue, 0.0)
    on = ", ".join(f"{n}:{g}" for n, g in v.placement.gpus_by_node.items())
    why = _idle_note(v)
    if not v.idle:
        why = f"{v.busy_note}, taken because {d.job} has waited {format_duration(waited)}"
    detail = (
        f"{why}; frees {v.gpus} GPUs ({on}) for {d.job} "
        f"({d.gpus} GPUs, {d.min_member} pods) in {d.queue} at {allocated:g}/{deserved:g}; "
        f"loses {format_duration(v.work_lost_seconds)} of work"
    )
    return Action(
        kind=ActionKind.PREEMPT,
        target=v.key,
        reason=Reason.IDLE_FOR_STARVED_QUEUE if v.idle else Reason.BUSY_FOR_LONG_STARVED,
        evidence=Evidence(v.forecast, d.job, d.queue, v.gpus, detail),
        job_kind=v.job.kind,
    )


def _idle_note(v: Victim) -> str:
    f = v.forecast
    return (
        f"idle below {f.threshold:.0%} for {format_duration(f.horizon_seconds)} "
        f"with p={f.confidence:.2f} ({f.method})"
    )
