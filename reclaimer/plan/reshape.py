"""Reshape planning: tune time-slice replicas per node from measured load and workload classes.

Only nodes already time-sliced (`replicas >= 2`) are managed; whole-GPU nodes are left as they are,
and so is a MIG-enabled node (one advertising MIG instances, `Node.mig`): it is skipped
`MigEnabled`, since its time-slicing config shares MIG instances whose utilization the GPU's device
metrics do not give. A node's ceiling is `timeSlicing.maxReplicas`, lowered by the most restrictive
workload class running there (a class allows floor(overcommit / gpuShare) replicas; pods are matched
to a class by `timeSlicing.classLabel`), never below 2; its memory limit is the lowest of
`memoryPressureAbove` and the classes' `maxMemory`. Load is the mean utilization over the node's
GPUs and the fullest GPU's memory fill, since every GPU gets the same replica count. In order: above
the ceiling -> lower to it; memory at or over its limit -> lower until the projected fill (fill
scaled by new/old replicas, as each replica holds its own memory) is under the limit; utilization at
or over `saturatedAbove` -> one replica less; utilization at or under `underusedBelow` -> raise to
the most replicas whose projected utilization stays at the middle of the band and projected memory
under the limit. A raise then passes the gates of `raises` (memory headroom for the new pods,
budgeted from the pods' memory peaks over days, and the node's load outlook over
`raiseHorizon`), which lower it or refuse it with their reason.
A node changes at most once per node cool-down, and only when the count actually changes.

A reshape takes two cycles: the actuator first writes the new config key, and relabels the node
only once the kubelet has had time to project the key into the device plugin's volume
(`timeSlicing.configProjectionDelay`); until then the node is skipped `WaitingForConfigProjection`,
and the next plan for it (the same target, unless its load changed) relabels it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from reclaimer.decisions import Action, ActionKind, Evidence, Reason, Skip
from reclaimer.devices import count
from reclaimer.model import MemoryPeaks, Node, Pod, PodGpuUsage
from reclaimer.plan.raises import load_gate, memory_gate
from reclaimer.policy.settings import TimeSlicing
from reclaimer.units import format_duration

MIN_REPLICAS = 2


def plan_reshapes(
    nodes: Sequence[Node],
    pods: Sequence[Pod],
    ts: TimeSlicing,
    *,
    max_per_cycle: int,
    now: float,
    last_actions: Mapping[str, float],
    usage: Sequence[PodGpuUsage] = (),
    peaks: MemoryPeaks | None = None,
) -> tuple[list[Action], list[Skip]]:
    """Reshape actions for nodes whose replicas should change, and skips for the rest; a raise
    passes the gates of `raises` first (`usage`: the per-pod device readings; `peaks`: the
    pods' memory peaks over days)."""
    classes = _classes_by_node(pods, ts.class_label)
    actions: list[Action] = []
    skips: list[Skip] = []
    for node in nodes:
        if node.replicas < MIN_REPLICAS or node.gpus <= 0:
            continue
        if node.mig:
            skips.append(_mig_skip(node))
            continue
        node_classes = sorted(set(node.workload_classes) | classes.get(node.name, set()))
        verdict = _decide(
            node,
            node_classes,
            ts,
            now=now,
            last_action=last_actions.get(node.name),
            usage=usage,
            peaks=peaks,
        )
        if isinstance(verdict, Action) and len(actions) >= max_per_cycle:
            verdict = Skip(node.name, Reason.LIMIT_REACHED, f"maxReshapesPerCycle={max_per_cycle}")
        if isinstance(verdict, Action):
            actions.append(verdict)
        else:
            skips.append(verdict)
    return actions, skips


def _gate(
    node: Node,
    target: int,
    util: float,
    usage: Sequence[PodGpuUsage],
    peaks: MemoryPeaks | None,
    *,
    ts: TimeSlicing,
    now: float,
) -> int | Skip:
    """The raise's target once memory headroom and then the load outlook allow it."""
    allowed = memory_gate(node, target, usage, ts, peaks)
    if isinstance(allowed, Skip):
        return allowed
    return load_gate(node, allowed, util, ts, now=now)


def _mig_skip(node: Node) -> Skip:
    offered = ", ".join(f"{r}: {n}" for r, n in sorted(node.mig.items()))
    why = f"MIG-enabled ({offered}): reshape leaves MIG GPUs alone"
    return Skip(node.name, Reason.MIG_ENABLED, why)


def _classes_by_node(pods: Sequence[Pod], label: str) -> dict[str, set[str]]:
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


def _decide(
    node: Node,
    classes: Sequence[str],
    ts: TimeSlicing,
    *,
    now: float,
    last_action: float | None,
    usage: Sequence[PodGpuUsage],
    peaks: MemoryPeaks | None,
) -> Action | Skip:
    times = [t for t in (node.last_reshape, last_action) if t is not None]
    if times and now - max(times) < ts.node_cooldown_seconds:
        ago = format_duration(max(now - max(times), 0.0))
        return Skip(node.name, Reason.COOLING_DOWN, f"reshaped {ago} ago")
    written = node.reshape_key_at
    if written is not None and now - written < ts.projection_delay_seconds:
        left = format_duration(round(max(0.0, ts.projection_delay_seconds - (now - written))))
        why = f"new config key written; the node is relabelled once it is projected ({left} left)"
        return Skip(node.name, Reason.CONFIG_PROJECTING, why)
    if not node.gpu_stats:
        return Skip(node.name, Reason.NO_METRICS, "no per-GPU stats for this node")
    ceiling, mem_limit, why = bounds(classes, ts)
    util = sum(s.utilization for s in node.gpu_stats) / len(node.gpu_stats)
    mem = max(s.memory_used_ratio for s in node.gpu_stats)
    r = node.replicas
    load = f"util {util:.0%}, memory {mem:.0%} (limit {mem_limit:.0%}), ceiling {ceiling} ({why})"
    target, reason = r, Reason.NO_CHANGE
    if r > ceiling:
        target, reason = ceiling, Reason.CLASS_LIMIT
    elif mem >= mem_limit:
        fits = [t for t in range(MIN_REPLICAS, r) if mem * t / r < mem_limit]
        target, reason = max(fits, default=MIN_REPLICAS), Reason.NODE_MEMORY_PRESSURE
    elif util >= ts.saturated_above:
        target, reason = max(MIN_REPLICAS, r - 1), Reason.NODE_SATURATED
    elif util <= ts.underused_below:
        aim = (ts.underused_below + ts.saturated_above) / 2
        ok = [
            t for t in range(r + 1, ceiling + 1) if util * t / r <= aim and mem * t / r < mem_limit
        ]
        target, reason = max(ok, default=r), Reason.NODE_UNDERUSED
    if target > r and len(node.gpu_stats) < node.gpus:  # an unreadable GPU is not underused
        seen = len(node.gpu_stats)
        why = (
            f"would raise {r} -> {target}, but only {seen} of {count(node.gpus, 'GPUs')} have stats"
        )
        return Skip(node.name, Reason.NO_METRICS, why)
    if target > r:
        gated = _gate(node, target, util, usage, peaks, ts=ts, now=now)
        if isinstance(gated, Skip):
            return gated
        target = gated
        load += f"; raise gates allow {target}"
    if target == r:
        held = "" if reason is Reason.NO_CHANGE else f" ({reason.value}, but already at the bound)"
        return Skip(node.name, Reason.NO_CHANGE, f"{r} replicas{held}; {load}")
    return Action(
        kind=ActionKind.RESHAPE,
        target=node.name,
        reason=reason,
        evidence=Evidence(
            detail=f"{r} -> {target} replicas; {load}; {count(len(node.gpu_stats), 'GPUs')}"
        ),
        from_replicas=r,
        to_replicas=target,
    )
