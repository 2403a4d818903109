"""A short fleet utilization summary printed with the plan: what the operator sees first.

Pure: it reads the ClusterView (who holds GPUs) and the per-pod utilization history (how busy they
were over the last `window` seconds). Busy ratio is GPU-weighted over pods with data; a pod is
idle when its utilization stayed below `threshold` for the whole window. Pods without data, or
with a step the exporter could not read in the window, are counted as unmeasured, never as idle.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from reclaimer.forecast.history import History
from reclaimer.model import ClusterView, PodPhase


@dataclass(frozen=True)
class FleetSummary:
    allocated_gpus: int  # GPUs held by running pods
    measured_gpus: int  # of which have utilization data in the window
    busy_ratio: float | None  # GPU-weighted mean utilization of the measured GPUs
    idle_gpus_by_namespace: tuple[tuple[str, int], ...]  # sorted by namespace
    window: float
    threshold: float

    @property
    def idle_gpus(self) -> int:
        return sum(n for _, n in self.idle_gpus_by_namespace)

    def as_dict(self) -> dict[str, object]:
        return {
            "allocated_gpus": self.allocated_gpus,
            "measured_gpus": self.measured_gpus,
            "busy_ratio": self.busy_ratio,
            "idle_gpus": self.idle_gpus,
            "idle_gpus_by_namespace": dict(self.idle_gpus_by_namespace),
            "window_seconds": self.window,
            "idle_threshold": self.threshold,
        }


def _pod_stats(
    pods: History, now: float, window: float
) -> tuple[dict[tuple[str, str], float], dict[tuple[str, str], float], set[tuple[str, str]]]:
    """(mean, max, pods with an unreadable step) over the window, by (namespace, pod)."""
    first = int(np.searchsorted(pods.times(), now - window, side="right"))
    recent = pods.values[:, first:]
    unread_rows = np.asarray((recent < 0).any(axis=1), dtype=bool)
    seen_rows = np.asarray((~np.isnan(recent)).any(axis=1), dtype=bool) & ~unread_rows
    with np.errstate(invalid="ignore"):
        mean = [float(v) for v in np.nanmean(recent[seen_rows], axis=1)]
        peak = [float(v) for v in np.nanmax(recent[seen_rows], axis=1)]
    keys = [_ns_pod(k) for k in pods.keys]
    known = [k for k, s in zip(keys, seen_rows.tolist(), strict=True) if s]
    return (
        dict(zip(known, mean, strict=True)),
        dict(zip(known, peak, strict=True)),
        {k for k, u in zip(keys, unread_rows.tolist(), strict=True) if u},
    )


def _ns_pod(key: str) -> tuple[str, str]:
    namespace, _, name = key.partition("/")
    return namespace, name


def summarize(
    view: ClusterView, pods: History, now: float, window: float, threshold: float
) -> FleetSummary:
    """`pods`: the reader's per-pod history (`prometheus.fold` cells: < 0 unreadable)."""
    means, peaks, unknown = _pod_stats(pods, now, window)
    allocated = measured = 0
    busy = 0.0
    idle: dict[str, int] = {}
    for pod in view.pods:
        if pod.gpus <= 0 or pod.phase is not PodPhase.RUNNING:
            continue
        allocated += pod.gpus
        key = (pod.namespace, pod.name)
        if key not in means or key in unknown:
            continue
        measured += pod.gpus
        busy += pod.gpus * float(means[key])
        if float(peaks[key]) < threshold:
            idle[pod.namespace] = idle.get(pod.namespace, 0) + pod.gpus
    return FleetSummary(
        allocated_gpus=allocated,
        measured_gpus=measured,
        busy_ratio=busy / measured if measured else None,
        idle_gpus_by_namespace=tuple(sorted(idle.items())),
        window=window,
        threshold=threshold,
    )


def render(summary: FleetSummary) -> str:
    busy = "n/a" if summary.busy_ratio is None else f"{summary.busy_ratio:.0%}"
    lines = [
        f"Fleet: {summary.allocated_gpus} GPUs allocated, {summary.measured_gpus} measured, "
        f"busy {busy} over the last {summary.window / 60:g} min; "
        f"{summary.idle_gpus} idle (< {summary.threshold:.0%})",
    ]
    lines += [f"  idle in {ns}: {n} GPU(s)" for ns, n in summary.idle_gpus_by_namespace]
    return "\n".join(lines)
