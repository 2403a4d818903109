"""The Volcano queues on the status page: each one's share, what it holds and what it waits for.

Rows come from the plan's `QueueStanding`s, the shares the cycle's decisions were made against.
A queue below its share with jobs waiting is *starved* (what preemption serves); one above its
share is lending GPUs that reclaim may take back, if the queue is reclaimable.
"""

from __future__ import annotations

from reclaimer.model import Plan
from reclaimer.report.status.markup import element, esc, paragraph, section, table
from reclaimer.standing import QueueStanding

HEADERS = (
    "Queue", "Deserved GPUs", "Allocated GPUs", "Pending GPUs (jobs)", "Guarantee", "Capability",
    "Reclaimable", "Standing",
)  # fmt: skip


def queues_section(plan: Plan) -> str:
    if not plan.queues:
        why = "No queue standing in this plan: the planner stopped before reading the queues."
        return section("Queues", paragraph(why), "queues")
    rows = [_row(q) for q in plan.queues]
    return section("Queues", table(HEADERS, rows, class_="queues"), "queues")


def _row(q: QueueStanding) -> tuple[str, ...]:
    cap = "—" if q.capability_gpus is None else f"{q.capability_gpus:g}"
    name = (
        esc(q.queue)
        if q.known
        else f"{esc(q.queue)} {element('span', '(no Queue object)', class_='warn')}"
    )
    return (
        name,
        _num(f"{q.deserved_gpus:g}"),
        _num(f"{q.allocated_gpus:g}"),
        _num(f"{q.pending_gpus:,} ({q.pending_jobs:,})"),
        _num(f"{q.guarantee_gpus:g}"),
        _num(cap),
        "yes" if q.reclaimable else "no",
        _standing(q),
    )


def _num(text: str) -> str:
    return element("span", esc(text), class_="num")


def _standing(q: QueueStanding) -> str:
    if q.starved:
        return element("span", "starved", class_="bad")
    if q.allocated_gpus > q.deserved_gpus:
        return element("span", "over its share", class_="warn")
    return element("span", "within its share", class_="ok")
