"""Victim search: the fewest, most confidently idle victims whose freed slots fit a pending gang.

Only slots of the device resource the gang asks for count (`reclaimer.devices`): a victim holding
none of them is no candidate for it, so a MIG instance is never freed for a whole-GPU job, nor an
instance of one profile for a job asking another.

Selection is greedy on pods gained per node (`free // pod_size`), each victim's gain capped at
what is still missing so that among victims that would each suffice the most confidently idle
wins; then victims the fit no longer needs are dropped again, which keeps the set small.
With `costAwareStops`, an idle victim is usable for a gang only where stopping it is worth it for
that gang (`reclaimer.plan.stop_cost`); one that is not is held back, saying both sides.
Searches are memoised between pending jobs (see `Memo`) so that thousands of pending jobs do not
each rescan every candidate.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace

from reclaimer.decisions import Reason, Skip
from reclaimer.devices import resource_key
from reclaimer.forecast import wording
from reclaimer.model import PendingDemand
from reclaimer.plan.capacity import FreeSlots, pod_shape
from reclaimer.plan.cluster_queues import frees_room_for
from reclaimer.plan.ledger import Ledger
from reclaimer.plan.limits import Budget
from reclaimer.plan.victims import Victim
from reclaimer.units import format_duration


@dataclass
class Memo:
    """Victim searches reusable from one pending job to the next.

    Between preemptions, free slots plus usable victims only shrink: grants reserve slots, the
    budget only tightens, guarantees only bind harder. So a (queue, pod size, pods) that found no
    room finds none later, and a queue's pool only loses members (it is re-filtered, marked
    stale, after each preemption). The exception is a queue whose own jobs were just preempted:
    their slots were never in its pool, so everything known about that queue is forgotten.
    """

    no_room: dict[tuple[str, str, int, int, bool], Skip] = field(default_factory=dict)
    pools: dict[tuple[str, bool], list[Victim]] = field(default_factory=dict)
    stale: set[tuple[str, bool]] = field(default_factory=set)

    def forget(self, queues: set[str]) -> None:
        self.no_room = {k: v for k, v in self.no_room.items() if k[0] not in queues}
        self.pools = {k: p for k, p in self.pools.items() if k[0] not in queues}
        self.stale = set(self.pools)


@dataclass
class Search:
    """Victim searches of one cycle: the budget, who is chosen, and what is memoised."""

    ledger: Ledger
    budget: Budget
    chosen: set[str] = field(default_factory=set)
    held_back: dict[str, Skip] = field(default_factory=dict)
    memo: Memo = field(default_factory=Memo)
    # (victim, resource, gang GPUs) -> whether stopping it pays (`costAwareStops`)
    worth: dict[tuple[str, str, int], bool] = field(default_factory=dict)

    def find(self, d: PendingDemand, victims: Sequence[Victim], busy: bool) -> list[Victim] | Skip:
        """Victims to preempt for `d`, or the skip saying why none make room."""
        pod_gpus, pods = pod_shape(d.gpus, d.min_member)
        resource = resource_key(d.gpus, d.mig)
        shape = (d.queue, resource, pod_gpus, pods, busy)
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
        holding = [v for v in known if v.placement.on(resource)]
        if not busy:
            holding = self._worth_stopping(d, resource, holding)
        free = self.ledger.free.of(resource)
        picked = _pick(holding, _Bins(free, resource), pod_gpus, pods, self.budget)
        if picked is None:
            self.memo.no_room[shape] = _unserved_skip(d, holding, self.budget, busy)
            return self.memo.no_room[shape]
        return picked

    def _worth_stopping(
        self, d: PendingDemand, resource: str, holding: list[Victim]
    ) -> list[Victim]:
        """The victims whose stop pays for `d` (all of them without the cost rule)."""
        kept: list[Victim] = []
        for v in holding:
            shape = (v.key, resource, d.gpus)
            if shape not in self.worth:
                cost = v.stop_cost(resource, d.gpus)
                self.worth[shape] = cost is None or cost.worth
                if not self.worth[shape] and cost is not None and v.key not in self.held_back:
                    detail = f"for {d.job}: {cost.text()}"
                    self.held_back[v.key] = Skip(v.key, Reason.STOP_NOT_WORTH, detail)
            if self.worth[shape]:
                kept.append(v)
        return kept

    def left_standing(self, v: Victim) -> Skip:
        if not v.idle:
            return Skip(v.key, Reason.NOT_IDLE, v.busy_note)
        return self.held_back.get(v.key) or Skip(v.key, Reason.NO_DEMAND, idle_note(v))


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
        if not frees_room_for(ledger.queues.get(d.queue), ledger.queues.get(v.job.queue)):
            continue  # another scheduler admits it: stopping it frees nothing d can take
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


@dataclass(frozen=True)
class _Bins:
    """The free slots of the resource searched for, and which resource that is."""

    free: FreeSlots
    resource: str


def _gain(v: Victim, bins: _Bins, extra: Mapping[str, int], pod_gpus: int) -> int:
    gain = 0
    for node, gpus in v.placement.on(bins.resource).items():
        before = bins.free.get(node) + extra.get(node, 0)
        gain += max(0, before + gpus) // pod_gpus - max(0, before) // pod_gpus
    return gain


def _pick(
    pool: Sequence[Victim], bins: _Bins, pod_gpus: int, pods: int, budget: Budget
) -> list[Victim] | None:
    """Fewest, most confidently idle victims whose freed slots fit `pods` x `pod_gpus`."""
    free = bins.free
    missing = pods - free.fit_count(pod_gpus)
    if not pool or free.fit_count(pod_gpus, _freed(pool, bins.resource)) < pods:
        return None  # even every usable victim together would not do
    gains = [(min(_gain(v, bins, {}, pod_gpus), missing), v) for v in pool]
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
        gain = _gain(v, bins, extra, pod_gpus)
        if (gain <= 0 and v.key in alone) or trial.blocker(v) is not None:
            continue
        picked.append(v)
        trial.take(v)
        missing -= gain
        for node, gpus in v.placement.on(bins.resource).items():
            extra[node] = extra.get(node, 0) + gpus
    if missing > 0:
        return None
    return _prune(picked, bins, pod_gpus, pods)


def _freed(victims: Iterable[Victim], resource: str) -> dict[str, int]:
    out: dict[str, int] = {}
    for v in victims:
        for node, gpus in v.placement.on(resource).items():
            out[node] = out.get(node, 0) + gpus
    return out


def _prune(picked: list[Victim], bins: _Bins, pod_gpus: int, pods: int) -> list[Victim]:
    """Drop victims (least preferred first) the fit does not need."""
    kept = list(picked)
    for v in sorted(picked, key=lambda x: x.rank, reverse=True):
        rest = [k for k in kept if k is not v]
        if bins.free.fit_count(pod_gpus, _freed(rest, bins.resource)) >= pods:
            kept = rest
    return kept


def _unserved_skip(d: PendingDemand, pool: Sequence[Victim], budget: Budget, busy: bool) -> Skip:
    if budget.exhausted():
        return Skip(d.job, Reason.LIMIT_REACHED, "cycle's preemption budget is spent")
    pod_gpus, pods = pod_shape(d.gpus, d.min_member)
    resource = resource_key(d.gpus, d.mig)
    usable = "usable job(s), idle or busy" if busy else "usable idle job(s)"
    return Skip(
        d.job,
        Reason.NO_FIT,
        f"{pods}x{pod_gpus} {resource} do not fit free slots plus {len(pool)} {usable} holding it",
    )


def idle_note(v: Victim) -> str:
    f = v.forecast
    return (
        f"idle below {f.threshold:.0%} for {format_duration(f.horizon_seconds)} "
        f"with {wording.odds_text(f)}"
    )
