"""The load rules of a reshape: the replica count a node's load and workload classes want. Pure.

A node's ceiling is `timeSlicing.maxReplicas`, lowered by the most restrictive workload class
running there (never below 2), and its memory limit the lowest of `memoryPressureAbove` and the
classes' `maxMemory` (`bounds`). Then, in order: above the ceiling -> lower to it; memory at or
over its limit -> lower until the projected fill is under it; utilization at or over
`saturatedAbove` -> one replica less; utilization at or under `underusedBelow` -> raise to the
most replicas whose projected utilization stays at the middle of the band (`load_target`). A
whole pool node is only ever raised. `reshape` passes every raise through the hold and gates.
"""

from __future__ import annotations

from collections.abc import Sequence

from reclaimer.decisions import Reason
from reclaimer.model import Node, Pod
from reclaimer.policy.settings import TimeSlicing

MIN_REPLICAS = 2
NO = Reason.NO_CHANGE


def classes_by_node(pods: Sequence[Pod], label: str) -> dict[str, set[str]]:
    """Node -> the workload classes its pods carry (`timeSlicing.classLabel`)."""
    out: dict[str, set[str]] = {}
    for pod in pods:
        name = pod.labels.get(label)
        if name and pod.node is not None:
            out.setdefault(pod.node, set()).add(name)
    return out


def bounds(classes: Sequence[str], ts: TimeSlicing) -> tuple[int, float, str]:
    """(replica ceiling, memory limit, what set them) for a node running `classes`."""
    ceiling, memory, why = ts.max_replicas, ts.memory_pressure_above, "policy"
    for name in classes:
        w = ts.workload(name)
        if w is None:
            continue
        if max(MIN_REPLICAS, w.max_replicas) < ceiling:
            ceiling, why = max(MIN_REPLICAS, w.max_replicas), f"class {name}"
        memory = min(memory, w.max_memory)
    return ceiling, memory, why


def load_target(
    node: Node, util: float, mem: float, limits: tuple[int, float], ts: TimeSlicing
) -> tuple[int, Reason]:
    """The count the load rules want, and why (`NoChangeNeeded` when they want none)."""
    ceiling, mem_limit = limits
    r = node.replicas
    if r < MIN_REPLICAS:  # a whole pool node is only ever raised
        return _underused(r, util, mem, limits, ts) if util <= ts.underused_below else (r, NO)
    if r > ceiling:
        return ceiling, Reason.CLASS_LIMIT
    if mem >= mem_limit:
        fits = [t for t in range(MIN_REPLICAS, r) if mem * t / r < mem_limit]
        return max(fits, default=MIN_REPLICAS), Reason.NODE_MEMORY_PRESSURE
    if util >= ts.saturated_above:
        return max(MIN_REPLICAS, r - 1), Reason.NODE_SATURATED
    if util <= ts.underused_below:
        return _underused(r, util, mem, limits, ts)
    return r, NO


def _underused(
    r: int, util: float, mem: float, limits: tuple[int, float], ts: TimeSlicing
) -> tuple[int, Reason]:
    """The most replicas whose projected load stays at the middle of the band."""
    ceiling, mem_limit = limits
    aim = (ts.underused_below + ts.saturated_above) / 2
    ok = [t for t in range(r + 1, ceiling + 1) if util * t / r <= aim and mem * t / r < mem_limit]
    return max(ok, default=r), Reason.NODE_UNDERUSED
