"""Each GPU job's recent utilization, cut down to a few points for the status page's charts.

The controller builds these once per cycle from what it already holds, the history frame the
forecaster read (job, timestamp, value: the max over the job's pods at each step) and the
cluster view (who holds how many GPUs), so that the page draws from memory and never queries
Prometheus. The last `window` seconds are cut into `points` equal buckets, each the mean of its
samples; a bucket without a sample is None (a gap, never a zero). Pure.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass

import pandas as pd

from reclaimer.model import ClusterView, PodPhase

WINDOW_SECONDS = 6 * 3600.0
POINTS = 48


@dataclass(frozen=True)
class JobUsage:
    job: str
    queue: str
    gpus: int  # held by its running pods
    points: tuple[float | None, ...]  # bucket means, oldest first; None: no sample
    window_seconds: float
    unknown: str = ""  # why its usage cannot be known (missing samples), else ""


def recent_usage(
    view: ClusterView,
    history: pd.DataFrame,
    unknown: Mapping[str, str],
    now: float,
    *,
    window: float = WINDOW_SECONDS,
    points: int = POINTS,
) -> dict[str, JobUsage]:
    """One `JobUsage` per job whose running pods hold GPUs, keyed by job."""
    gpus: dict[str, int] = {}
    for pod in view.pods:
        if pod.job and pod.gpus > 0 and pod.phase is PodPhase.RUNNING:
            gpus[pod.job] = gpus.get(pod.job, 0) + pod.gpus
    queues = {j.key: j.queue for j in view.jobs}
    buckets = _buckets(history, now, window, points)
    empty: tuple[float | None, ...] = (None,) * points
    return {
        job: JobUsage(
            job=job,
            queue=queues.get(job, ""),
            gpus=n,
            points=buckets.get(job, empty),
            window_seconds=window,
            unknown=unknown.get(job, ""),
        )
        for job, n in sorted(gpus.items())
    }


def _buckets(
    history: pd.DataFrame, now: float, window: float, points: int
) -> dict[str, tuple[float | None, ...]]:
    start = now - window
    recent = history[(history["timestamp"] > start) & (history["timestamp"] <= now)]
    if recent.empty:
        return {}
    size = window / points
    index = ((recent["timestamp"] - start) // size).clip(0, points - 1).astype(int)
    means = recent["value"].groupby([recent["job"], index]).mean().unstack()
    means = means.reindex(columns=range(points))
    return {
        str(job): tuple(None if math.isnan(v) else float(v) for v in row)
        for job, row in zip(means.index, means.to_numpy(dtype=float), strict=True)
    }
