"""The planning ledger: free slots per resource and node, and slots per queue, as a cycle plans
them."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from reclaimer.decisions import Reason, Skip
from reclaimer.devices import resource_key
from reclaimer.model import PendingDemand, Queue
from reclaimer.plan.capacity import FreePool, Placement, Releasing
from reclaimer.plan.victims import Victim
from reclaimer.standing import QueueStanding


@dataclass
class Ledger:
    """The cycle's working state: free slots per resource and node and slots per queue, as
    planned so far.

    `free` is future free: slots no bound pod holds plus slots being released (`releasing`), the
    room a stop already under way will give back.
    """

    free: FreePool
    allocated: dict[str, float]  # running plus granted to pending jobs this cycle
    running: dict[str, float]  # running now, less what this cycle preempts (for guarantees)
    deserved: Mapping[str, float]
    queues: Mapping[str, Queue]
    unserved: list[PendingDemand] = field(default_factory=list)
    releasing: Releasing = field(default_factory=lambda: Releasing({}, {}))

    def fits(self, resource: str, pod_gpus: int, pods: int) -> bool:
        """Whether `pods` pods of `pod_gpus` slots of `resource` fit the (future) free slots."""
        return self.free.of(resource).fit_count(pod_gpus) >= pods

    def fits_now(self, resource: str, pod_gpus: int, pods: int) -> bool:
        """Whether the pods fit what is free already, releasing slots left out."""
        less = {n: -g for n, g in self.releasing.by_resource.get(resource, {}).items()}
        return self.free.of(resource).fit_count(pod_gpus, less) >= pods

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


def release(v: Victim, ledger: Ledger) -> None:
    """Book a chosen victim's slots as free and its queue's allocation as gone."""
    release_job(v.job.queue, v.placement, ledger)


def release_job(queue: str, placement: Placement, ledger: Ledger) -> None:
    """Book a stopped job's slots (`placement`) as free and its queue's allocation as gone."""
    for resource, by_node in placement.resources.items():
        for node, gpus in by_node.items():
            ledger.free.of(resource).add(node, gpus)
    ledger.allocated[queue] = ledger.allocated.get(queue, 0.0) - placement.gpus
    ledger.running[queue] = ledger.running.get(queue, 0.0) - placement.gpus


def grant(d: PendingDemand, pod_gpus: int, pods: int, ledger: Ledger) -> None:
    """Reserve `pods` x `pod_gpus` free slots for `d` and count its GPUs to its queue."""
    ledger.free.of(resource_key(d.gpus, d.mig)).reserve(pod_gpus, pods)
    ledger.allocated[d.queue] = ledger.allocated.get(d.queue, 0.0) + d.gpus


def standings(ledger: Ledger, demands: Iterable[PendingDemand]) -> tuple[QueueStanding, ...]:
    """Each queue's share, allocation and waiting demand, by name: read before anything is
    booked, so it shows what the cycle's decisions started from. Queues that jobs name but the
    cluster lacks are listed too (`known=False`)."""
    waiting: dict[str, list[PendingDemand]] = {}
    for d in demands:
        waiting.setdefault(d.queue, []).append(d)
    names = sorted({*ledger.queues, *ledger.allocated, *waiting})
    out = []
    for name in names:
        q = ledger.queues.get(name)
        asks = waiting.get(name, [])
        out.append(
            QueueStanding(
                queue=name,
                deserved_gpus=ledger.deserved.get(name, 0.0),
                allocated_gpus=ledger.allocated.get(name, 0.0),
                pending_gpus=sum(d.gpus for d in asks),
                pending_jobs=len(asks),
                guarantee_gpus=q.guarantee_gpus if q else 0.0,
                capability_gpus=q.capability_gpus if q else None,
                reclaimable=q.reclaimable if q else True,
                known=q is not None,
            )
        )
    return tuple(out)
