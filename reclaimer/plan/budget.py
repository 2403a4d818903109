"""The replicas a time-sliced node may keep: the raise gate's memory budget, held as a cap. Pure.

The raise gate (`raises.memory_gate`) budgets every pod slot of a GPU at the
`memoryPeakQuantile` of the pods' device-memory peaks over the week (`raises.slot_budget`): a
pod placed there later may come to hold that much. The same budget caps the count a node keeps.
A GPU of M bytes holds R slots while R x slot <= M x `podsDoNotFitAbove` (the line past which
pods cannot all fit, the one `harm.peak_fit` lowers at), and every GPU of a node gets the same
count, so its smallest GPU with memory read decides. A node above its cap is lowered to it,
down to 1 replica (`MemoryBudgetExceeded`), ahead of the load rules: time-slicing isolates no
memory, a pod whose allocation fails crash-loops in place (k8s-device-plugin #323) and its
Job's `backoffLimit` fails it within minutes, faster than a cycle comes round, so the pods
that would not fit must never be put together. The lowering evicts nothing.

The cap lowers at the hard line, not at the raise's `memoryHeadroom`: the headroom is a
raise's margin for growth not yet measured, and lowering there would take sharing from nodes
whose budgeted pods fit. Between the two lines a node is neither raised nor lowered. Where an
operator sets the line below the headroom's, `raise_cap` keeps a raise from passing the cap.

Unknown is not a reason to act, nor to raise: peaks unread, failed, or of fewer than
`MIN_PEAK_PODS` pods (a freshly installed controller, a new cluster), or no GPU's memory read,
leave the node's replicas as the operator set them; `cap` then says why, for the plan.
"""

from __future__ import annotations

from dataclasses import dataclass

from reclaimer.decisions import Reason, Skip
from reclaimer.model import MemoryPeaks, Node
from reclaimer.plan.raises import slot_budget
from reclaimer.policy.settings import TimeSlicing
from reclaimer.units import format_duration

GIB = 1024.0**3


@dataclass(frozen=True)
class Cap:
    """The most replicas the node's smallest GPU holds at the budget, and why."""

    replicas: int
    why: str


def slot(peaks: MemoryPeaks | None, ts: TimeSlicing) -> float | str:
    """Bytes each pod slot is budgeted at (the raise gate's), or why they are unknown."""
    return slot_budget(peaks, ts.memory_peak_quantile)


def cap(node: Node, budget: float | str, peaks: MemoryPeaks | None, ts: TimeSlicing) -> Cap | str:
    """The node's cap at `budget` bytes a slot (`slot`), or why the budget says nothing."""
    if isinstance(budget, str):
        return f"memory budget unknown, the replicas stand as set: {budget}"
    read = [s for s in node.gpu_stats if s.memory_total_bytes]
    if not read:
        return "memory budget not applied: device memory (FB_USED/FB_FREE) is not read"
    if budget <= 0:
        return "memory budget not applied: the pods' memory peaks are all 0 bytes"
    smallest = min(read, key=lambda s: s.memory_total_bytes or 0.0)
    limit = (smallest.memory_total_bytes or 0.0) * ts.pods_do_not_fit_above
    room = int(limit // budget)
    measured = 0 if peaks is None else len(peaks.pods)
    window = format_duration(peaks.window) if peaks is not None else "the window"
    why = (
        f"each pod may come to hold {budget / GIB:.1f} GiB (the {ts.memory_peak_quantile:.0%} "
        f"memory peak of {measured} pods over {window}); GPU {smallest.uuid or '?'} has "
        f"{(smallest.memory_total_bytes or 0.0) / GIB:.1f} GiB, and pods past "
        f"{ts.pods_do_not_fit_above:.0%} of it ({limit / GIB:.1f} GiB) do not fit: room for "
        f"{room} pod(s)"
    )
    return Cap(room, why)


def lowering(node: Node, capped: Cap | str) -> tuple[int, Reason, str] | None:
    """(replicas, reason, evidence) when the node holds more replicas than its cap allows."""
    if isinstance(capped, str) or node.replicas <= capped.replicas:
        return None
    target = max(1, capped.replicas)
    return (
        target,
        Reason.MEMORY_BUDGET_EXCEEDED,
        f"{node.replicas} -> {target} replicas: {capped.why}",
    )


def raise_cap(node: Node, target: int, capped: Cap | str) -> int | Skip:
    """A raise's target held to the cap (the raise gate keeps its own headroom below it)."""
    if isinstance(capped, str) or target <= capped.replicas:
        return target
    if capped.replicas > node.replicas:
        return capped.replicas
    why = f"would raise {node.replicas} -> {target}, but the memory budget caps it: {capped.why}"
    return Skip(node.name, Reason.NO_MEMORY_HEADROOM, why)
