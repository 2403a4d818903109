"""A short fleet utilization summary printed with the plan: what the operator sees first.

Pure: it reads the ClusterView (who holds which devices, on which node) and the per-pod
utilization history (how busy they were over the last `window` seconds). A pod is idle when its
utilization stayed below `threshold` for the whole window. Pods without data, or with a step the
exporter could not read in the window, are counted as unmeasured, never as idle.

Units, each for what it counts (docs/planning.md, "The fleet summary"):

- *GPU slots*: what pods ask for as `nvidia.com/gpu` on a node without MIG; on a time-sliced node
  a slot is one replica, 1/replicas of a GPU. A whole GPU allocated through a DRA claim is a slot
  and a GPU (`reclaimer.devices.is_dra_gpu`); a DRA MIG device is a MIG instance.
- *GPUs*: physical GPUs. A pod's slots count as slots / replicas of its node's GPU, so the pods
  sharing a GPU add up to at most that GPU, idle ones included.
- *MIG instances*: what pods ask for as `nvidia.com/mig-*`, or as `nvidia.com/gpu` on a node with
  the single MIG strategy; counted apart, never as GPUs.

The busy ratio is over the measured GPUs: a pod's utilization is its share of the GPU's time, so
the sharers' utilizations add up to the GPU's; MIG instances are left out of it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np

from reclaimer.devices import WHOLE_GPU, count, is_dra_gpu
from reclaimer.forecast.history import History, columns_between
from reclaimer.model import ClusterView, Node, Pod, PodPhase


@dataclass(frozen=True)
class Held:
    """What one pod holds: GPU slots and their physical GPUs, and MIG instances."""

    slots: int = 0
    gpus: float = 0.0
    mig: int = 0


def held(pod: Pod, node: Node | None) -> Held:
    """A pod's devices in each unit (an unknown node counts as unshared, without MIG)."""
    whole = pod.gpus - sum(pod.mig.values())
    dra = sum(n for r, n in pod.mig.items() if is_dra_gpu(r))  # a slot each, a whole GPU
    mig = sum(pod.mig.values()) - dra
    if node is not None and WHOLE_GPU in node.mig:  # single strategy: nvidia.com/gpu is MIG
        return Held(slots=dra, gpus=float(dra), mig=mig + whole)
    replicas = max(1, node.replicas) if node is not None else 1
    return Held(slots=whole + dra, gpus=whole / replicas + dra, mig=mig)


@dataclass(frozen=True)
class FleetSummary:
    allocated_gpu_slots: int  # GPU slots held by running pods
    allocated_gpus: float  # the physical GPUs those slots are
    allocated_mig_instances: int
    measured_gpus: float  # of allocated_gpus, those with utilization data in the window
    busy_ratio: float | None  # busy share of the measured GPUs' time
    idle_gpus_by_namespace: tuple[tuple[str, float], ...]  # physical GPUs, sorted by namespace
    idle_gpu_slots_by_namespace: tuple[tuple[str, int], ...]
    idle_mig_instances_by_namespace: tuple[tuple[str, int], ...]
    window: float
    threshold: float

    @property
    def idle_gpus(self) -> float:
        return sum(n for _, n in self.idle_gpus_by_namespace)

    @property
    def idle_mig_instances(self) -> int:
        return sum(n for _, n in self.idle_mig_instances_by_namespace)

    def as_dict(self) -> dict[str, object]:
        return {
            "allocated_gpu_slots": self.allocated_gpu_slots,
            "allocated_gpus": round(self.allocated_gpus, 3),
            "allocated_mig_instances": self.allocated_mig_instances,
            "measured_gpus": round(self.measured_gpus, 3),
            "busy_ratio": None if self.busy_ratio is None else round(self.busy_ratio, 4),
            "idle_gpus": round(self.idle_gpus, 3),
            "idle_gpus_by_namespace": {ns: round(n, 3) for ns, n in self.idle_gpus_by_namespace},
            "idle_gpu_slots_by_namespace": dict(self.idle_gpu_slots_by_namespace),
            "idle_mig_instances": self.idle_mig_instances,
            "idle_mig_instances_by_namespace": dict(self.idle_mig_instances_by_namespace),
            "window_seconds": self.window,
            "idle_threshold": self.threshold,
        }


def _add(into: dict[str, float], key: str, n: float) -> None:
    if n:
        into[key] = into.get(key, 0) + n


def _pod_stats(
    pods: History, now: float, window: float
) -> tuple[dict[str, float], dict[str, float], set[str]]:
    """(mean, max, pods with an unreadable step) over the window, by pod key (`Pod.key`, the
    reader's row key)."""
    span = columns_between(pods.times(), now - window)
    recent = pods.values[:, span]
    unread_rows = np.asarray((recent < 0).any(axis=1), dtype=bool)
    seen_rows = np.asarray((~np.isnan(recent)).any(axis=1), dtype=bool) & ~unread_rows
    mean: list[float] = []
    peak: list[float] = []
    if seen_rows.any():  # (an empty window has no column to reduce)
        with np.errstate(invalid="ignore"):
            mean = [float(v) for v in np.nanmean(recent[seen_rows], axis=1)]
            peak = [float(v) for v in np.nanmax(recent[seen_rows], axis=1)]
    known = [k for k, s in zip(pods.keys, seen_rows.tolist(), strict=True) if s]
    return (
        dict(zip(known, mean, strict=True)),
        dict(zip(known, peak, strict=True)),
        {k for k, u in zip(pods.keys, unread_rows.tolist(), strict=True) if u},
    )


def summarize(
    view: ClusterView, pods: History, now: float, window: float, threshold: float
) -> FleetSummary:
    """`pods`: the reader's per-pod history (`prometheus.fold` cells: < 0 unreadable)."""
    means, peaks, unknown = _pod_stats(pods, now, window)
    nodes: Mapping[str, Node] = {n.name: n for n in view.nodes}
    total = Held()
    measured = busy = 0.0
    idle: dict[str, dict[str, float]] = {"gpus": {}, "slots": {}, "mig": {}}
    for pod in view.pods:
        if pod.gpus <= 0 or pod.phase is not PodPhase.RUNNING:
            continue
        h = held(pod, nodes.get(pod.node or ""))
        total = Held(total.slots + h.slots, total.gpus + h.gpus, total.mig + h.mig)
        key = pod.key
        if key not in means or key in unknown:
            continue
        measured += h.gpus
        busy += h.slots * float(means[key])
        if float(peaks[key]) < threshold:
            for unit, n in (("gpus", h.gpus), ("slots", h.slots), ("mig", h.mig)):
                _add(idle[unit], pod.namespace, n)
    return FleetSummary(
        allocated_gpu_slots=total.slots,
        allocated_gpus=total.gpus,
        allocated_mig_instances=total.mig,
        measured_gpus=measured,
        busy_ratio=min(1.0, busy / measured) if measured else None,
        idle_gpus_by_namespace=tuple(sorted(idle["gpus"].items())),
        idle_gpu_slots_by_namespace=tuple((k, int(v)) for k, v in sorted(idle["slots"].items())),
        idle_mig_instances_by_namespace=tuple((k, int(v)) for k, v in sorted(idle["mig"].items())),
        window=window,
        threshold=threshold,
    )


def render(summary: FleetSummary) -> str:
    busy = "n/a" if summary.busy_ratio is None else f"{summary.busy_ratio:.0%}"
    s = summary
    mig = (
        f", {count(s.allocated_mig_instances, 'MIG instances')}"
        if s.allocated_mig_instances
        else ""
    )
    lines = [
        f"Fleet: {count(s.allocated_gpu_slots, 'GPU slots')} allocated "
        f"({count(round(s.allocated_gpus, 2), 'GPUs')}){mig}, "
        f"{count(round(s.measured_gpus, 2), 'GPUs')} measured, "
        f"busy {busy} over the last {s.window / 60:g} min; "
        f"{count(round(s.idle_gpus, 2), 'GPUs')} idle (< {s.threshold:.0%})",
    ]
    slots = dict(s.idle_gpu_slots_by_namespace)
    gpus = dict(s.idle_gpus_by_namespace)
    instances = dict(s.idle_mig_instances_by_namespace)
    for ns in sorted(set(slots) | set(instances)):
        parts = []
        if ns in slots:
            parts.append(f"{count(slots[ns], 'GPU slots')} = {count(round(gpus[ns], 2), 'GPUs')}")
        if ns in instances:
            parts.append(count(instances[ns], "MIG instances"))
        lines.append(f"  idle in {ns}: {', '.join(parts)}")
    return "\n".join(lines)
