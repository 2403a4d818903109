"""Reshape planning: tune time-slice replicas per node from measured load and workload classes.

Only nodes already time-sliced (`replicas >= 2`) are managed, and whole nodes the operator put in
the managed pool (`Node.pool`, label `gpu-reclaim.io/time-slicing-pool: "true"`), except one
handed back whole for a waiting multi-GPU job, or one where a pod holds several GPUs whole (a
raise would put replicas on them); other whole-GPU nodes are left as they are, and so is a
MIG-enabled node (one advertising MIG instances, `Node.mig`): it is skipped `MigEnabled`, since
its time-slicing config shares MIG instances whose utilization the GPU's device metrics do not
give. A node whose GPUs come from DRA ResourceSlices (`Node.dra`) is skipped `DraDevices`: DRA
shares a device per claim, with no per-node replica count. A node's ceiling is
`timeSlicing.maxReplicas`, lowered by the most restrictive workload class running there (a class
allows floor(overcommit / gpuShare) replicas; pods are matched to a class by
`timeSlicing.classLabel`), never below 2; its memory limit is the lowest of `memoryPressureAbove`
and the classes' `maxMemory`. Load is the mean utilization over the node's GPUs and the fullest
GPU's memory fill, since every GPU gets the same replica count. In order: above the ceiling ->
lower to it; memory at or over its limit -> lower until the projected fill (fill scaled by new/old
replicas, as each replica holds its own memory) is under the limit; utilization at or over
`saturatedAbove` -> one replica less; utilization at or under `underusedBelow` -> raise to the most
replicas whose projected utilization stays at the middle of the band and projected memory under the
limit (`load_rules`). A raise then passes the gates of `raises` (memory headroom for the new pods,
budgeted from the pods' memory peaks over days), of `contend` (a guaranteed pod beside neighbours
as busy as the fleet's must seldom wait for them) and of `raises` again (the node's load outlook
over `raiseHorizon`), which lower it or refuse it with their reason. A node changes at most once
per node cool-down, and only when the count actually changes.

Before any of that, evidence that the node's pods do not fit it (`harm`: crashes, or a GPU's
pods at their peaks past its memory), or that its guaranteed pods wait for busy neighbours
(`contend`), lowers it, down to 1 replica (whole GPUs), and holds its raises for
`harmRaiseHold`; a count above what the raise gate's memory budget lets fit lowers
it too, down to 1 (`budget`; the lower count wins), and caps every raise; and a multi-GPU job
that waits for whole GPUs the pool holds gets a pool node lowered to 1 (`handback`). Only these
go below 2. A pool node at 1 replica is only ever raised (by the underused rule, through the
same hold and gates): so a pool installed whole shares nothing until the memory budget is known
and says its pods fit.

A reshape takes two cycles: the actuator first writes the new config key, and relabels the node
only once the kubelet has had time to project the key into the device plugin's volume
(`timeSlicing.configProjectionDelay`); until then the node is skipped `WaitingForConfigProjection`,
and the next plan for it (the same target, unless its load changed) relabels it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from reclaimer.decisions import Action, ActionKind, Evidence, Reason, Skip
from reclaimer.devices import count
from reclaimer.model import (
    ContainerCrash,
    MemoryPeaks,
    Node,
    PendingDemand,
    Pod,
    PodGpuUsage,
)
from reclaimer.plan import budget, harm, whole_pool
from reclaimer.plan.contend import Contend
from reclaimer.plan.handback import Handback, handbacks
from reclaimer.plan.load_rules import MIN_REPLICAS, bounds, classes_by_node, load_target
from reclaimer.plan.raises import load_gate, memory_gate
from reclaimer.policy.settings import TimeSlicing
from reclaimer.units import format_duration


@dataclass(frozen=True)
class Pressure:
    """What lowers nodes ahead of the load rules: the cycle's container crashes (`harm`) and its
    pending demand (`handback`; `wait` is `reclaimAfter`)."""

    crashes: Sequence[ContainerCrash] = ()
    pending: Sequence[PendingDemand] = ()
    wait: float = 0.0
    contend: Contend | None = None  # guaranteed pods' contention (`contend`)


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
    pressure: Pressure | None = None,
) -> tuple[list[Action], list[Skip]]:
    """Reshape actions for nodes whose replicas should change, and skips for the rest; a raise
    passes the gates of `raises` first (`usage`: the per-pod device readings; `peaks`: the
    pods' memory peaks over days; `pressure`: the crashes and the pending demand that may lower
    a node to 1)."""
    found = pressure or Pressure()
    slot = budget.slot(peaks, ts)  # one budget for every node of the cycle
    classes = classes_by_node(pods, ts.class_label)
    wide = whole_pool.wide_pods(pods)
    crashed = harm.by_node(found.crashes)
    idle = [n for n in nodes if _cooling(n, ts, now, last_actions.get(n.name)) is None]
    handed = handbacks(idle, pods, found.pending, now=now, wait=found.wait)
    rows: dict[str, list[PodGpuUsage]] = {}  # each node reads its own pods' rows only
    for u in usage:
        rows.setdefault(u.node, []).append(u)
    actions: list[Action] = []
    skips: list[Skip] = []
    for node in nodes:
        if node.dra:
            skips.append(_dra_skip(node))
            continue
        if not whole_pool.managed(node, MIN_REPLICAS):
            continue
        if node.mig:
            skips.append(_mig_skip(node))
            continue
        if node.replicas < MIN_REPLICAS and node.name in wide:
            skips.append(whole_pool.wide_skip(node, wide[node.name]))
            continue
        node_classes = sorted(set(node.workload_classes) | classes.get(node.name, set()))
        verdict = _decide(
            node,
            node_classes,
            ts,
            now=now,
            last_action=last_actions.get(node.name),
            usage=rows.get(node.name, ()),
            peaks=peaks,
            crashed=crashed.get(node.name, ()),
            handback=handed.get(node.name),
            slot=slot,
            contend=found.contend,
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
    capped: budget.Cap | str,
    contend: Contend | None = None,
    slot: float | str | None = None,
) -> int | Skip:
    """The raise's target once memory headroom (and the budget's cap), the guaranteed pods'
    contention and then the load outlook allow it."""
    allowed = memory_gate(node, target, usage, ts, peaks, budgeted=slot)
    if not isinstance(allowed, Skip):
        allowed = budget.raise_cap(node, allowed, capped)
    if not isinstance(allowed, Skip) and contend is not None:
        allowed = contend.gate(node, allowed, ts)
    if isinstance(allowed, Skip):
        return allowed
    return load_gate(node, allowed, util, ts, now=now)


def _mig_skip(node: Node) -> Skip:
    offered = ", ".join(f"{r}: {n}" for r, n in sorted(node.mig.items()))
    why = f"MIG-enabled ({offered}): reshape leaves MIG GPUs alone"
    return Skip(node.name, Reason.MIG_ENABLED, why)


def _dra_skip(node: Node) -> Skip:
    why = (
        "GPUs allocated through DRA ResourceSlices: there are no per-node time-slice replicas"
        " to reshape (sharing under DRA is set per claim)"
    )
    return Skip(node.name, Reason.DRA_DEVICES, why)


def _cooling(node: Node, ts: TimeSlicing, now: float, last_action: float | None) -> Skip | None:
    times = [t for t in (node.last_reshape, last_action) if t is not None]
    if times and now - max(times) < ts.node_cooldown_seconds:
        ago = format_duration(max(now - max(times), 0.0))
        return Skip(node.name, Reason.COOLING_DOWN, f"reshaped {ago} ago")
    return None


def _decide(
    node: Node,
    classes: Sequence[str],
    ts: TimeSlicing,
    *,
    now: float,
    last_action: float | None,
    usage: Sequence[PodGpuUsage],
    peaks: MemoryPeaks | None,
    crashed: Sequence[ContainerCrash] = (),
    handback: Handback | None = None,
    slot: float | str,
    contend: Contend | None = None,
) -> Action | Skip:
    cooling = _cooling(node, ts, now, last_action)
    if cooling is not None:
        return cooling
    written = node.reshape_key_at
    if written is not None and now - written < ts.projection_delay_seconds:
        left = format_duration(round(max(0.0, ts.projection_delay_seconds - (now - written))))
        why = f"new config key written; the node is relabelled once it is projected ({left} left)"
        return Skip(node.name, Reason.CONFIG_PROJECTING, why)
    capped = budget.cap(node, slot, peaks, ts)
    lower = harm.lowest(
        harm.lowering(node, crashed, usage, peaks, ts, now=now),
        contend.lowering(node, ts) if contend is not None else None,
        budget.lowering(node, capped),
    )
    if lower is not None:
        return _action(node, lower[0], lower[1], Evidence(detail=lower[2]))
    if handback is not None:
        ev = Evidence(for_pending=handback.job, for_queue=handback.queue, detail=handback.detail)
        return _action(node, 1, Reason.WHOLE_GPUS_FOR_PENDING, ev)
    if not node.gpu_stats:
        return Skip(node.name, Reason.NO_METRICS, "no per-GPU stats for this node")
    verdict = _by_load(
        node,
        classes,
        ts,
        now=now,
        usage=usage,
        peaks=peaks,
        crashed=crashed,
        capped=capped,
        contend=contend,
        slot=slot,
    )
    if isinstance(capped, str) and isinstance(verdict, Skip) and verdict.reason is Reason.NO_CHANGE:
        return Skip(node.name, Reason.NO_CHANGE, f"{verdict.detail}; {capped}")
    return verdict


def _action(node: Node, target: int, reason: Reason, evidence: Evidence) -> Action:
    return Action(
        kind=ActionKind.RESHAPE,
        target=node.name,
        reason=reason,
        evidence=evidence,
        from_replicas=node.replicas,
        to_replicas=target,
    )


def _by_load(
    node: Node,
    classes: Sequence[str],
    ts: TimeSlicing,
    *,
    now: float,
    usage: Sequence[PodGpuUsage],
    peaks: MemoryPeaks | None,
    crashed: Sequence[ContainerCrash],
    capped: budget.Cap | str,
    contend: Contend | None = None,
    slot: float | str | None = None,
) -> Action | Skip:
    """The load rules (module doc), each raise through the hold and the gates."""
    ceiling, mem_limit, why = bounds(classes, ts)
    util = sum(s.utilization for s in node.gpu_stats) / len(node.gpu_stats)
    mem = max(s.memory_used_ratio for s in node.gpu_stats)
    r = node.replicas
    load = f"util {util:.0%}, memory {mem:.0%} (limit {mem_limit:.0%}), ceiling {ceiling} ({why})"
    target, reason = load_target(node, util, mem, (ceiling, mem_limit), ts)
    if target > r and len(node.gpu_stats) < node.gpus:  # an unreadable GPU is not underused
        seen = len(node.gpu_stats)
        why = (
            f"would raise {r} -> {target}, but only {seen} of {count(node.gpus, 'GPUs')} have stats"
        )
        return Skip(node.name, Reason.NO_METRICS, why)
    if target > r:
        held = harm.raise_hold(node, crashed, ts, now=now)
        if held is not None:
            return Skip(node.name, Reason.RAISE_HELD, f"would raise {r} -> {target}: {held}")
        gated = _gate(
            node,
            target,
            util,
            usage,
            peaks,
            ts=ts,
            now=now,
            capped=capped,
            contend=contend,
            slot=slot,
        )
        if isinstance(gated, Skip):
            return gated
        target = gated
        load += f"; raise gates allow {target}"
    if target == r:
        held = "" if reason is Reason.NO_CHANGE else f" ({reason.value}, but already at the bound)"
        return Skip(node.name, Reason.NO_CHANGE, f"{r} replicas{held}; {load}")
    detail = f"{r} -> {target} replicas; {load}; {count(len(node.gpu_stats), 'GPUs')}"
    return _action(node, target, reason, Evidence(detail=detail))
