"""Each GPU job's recent utilization, cut down to a few points for the status page's charts.

The controller builds these once per cycle from what it already holds, the per-job history the
forecaster read (float32 arrays: the max over the job's pods at each step) and the
cluster view (who holds how many GPUs), so that the page draws from memory and never queries
Prometheus. The last `window` seconds are cut into `points` equal buckets, each the mean of its
samples; a bucket without a sample is None (a gap, never a zero). Pure.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np

from reclaimer.forecast.history import History, columns_between
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
    history: History,
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
    history: History, now: float, window: float, points: int
) -> dict[str, tuple[float | None, ...]]:
    """Job -> bucket means, straight from the per-job arrays (no long frame is built): the
    window's columns, each assigned to its bucket, averaged over their samples per row."""
    start = now - window
    times = history.times()
    cols = columns_between(times, start, now)
    if not history.keys or cols.stop == cols.start:
        return {}
    bucket = np.clip(((times[cols] - start) // (window / points)).astype(np.int64), 0, points - 1)
    recent = history.values[:, cols]
    present = ~np.isnan(recent)
    sums = np.zeros((len(history.keys), points))
    counts = np.zeros((len(history.keys), points))
    for k in np.unique(bucket):
        in_k = bucket == k
        sums[:, k] = np.where(present[:, in_k], recent[:, in_k], 0.0).sum(axis=1)
        counts[:, k] = present[:, in_k].sum(axis=1)
    with np.errstate(invalid="ignore", divide="ignore"):
        means = np.where(counts > 0, sums / counts, np.nan)
    return {
        job: tuple(None if math.isnan(v) else v for v in row)
        for job, row, seen in zip(history.keys, means.tolist(), counts.sum(axis=1) > 0, strict=True)
        if seen
    }
