"""Which jobs' recent GPU utilization is known: unknown is not idle. Pure.

A GPU the exporter cannot read (a failing NVML call, a lost GPU, an exporter that stopped being
scraped) must never look idle. The exporter leaves such a pod's utilization sample out while it
still reports the pod's allocation; the reclaimer's query turns "allocated, no reading" into a
NaN point (`history.pod_utilization_query`), and a scrape that did not happen leaves no point at
all. Either way a step of the recent window lacks a known value.

A job holding GPUs is *unknown* when any of its running GPU pods, over the recent window
(`Recent.start`, the policy's horizon back from now, to the newest step Prometheus has for the
fleet), has a NaN point or fewer known points than grid steps it has been running for (its first
two steps after start are allowed to be missing: the exporter discovers a new pod within a
collect interval and a scrape later), or has no point at all since `fresh_since`. Unknown jobs
are left out of the forecaster's history and reach the planner with their reason, which skips
them (`UsageUnknown`) whatever else it knows. Works the same for every metrics source:
dcgm-exporter's pod series simply vanish when it cannot read a GPU.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np

from reclaimer.forecast.history import History, columns_between
from reclaimer.model import ClusterView, Pod, PodPhase
from reclaimer.units import format_duration

STARTUP_STEPS = 2  # steps after a pod's start that may lack a reading


@dataclass(frozen=True)
class Recent:
    """The window whose samples must all be there, and the step of the grid they sit on."""

    start: float  # now - horizon
    step: float
    fresh_since: float | None = None  # a pod needs a point at or after this (now - maxDataAge)


def running_gpu_pods(view: ClusterView) -> dict[str, list[Pod]]:
    """Job key -> its running pods that hold GPUs."""
    out: dict[str, list[Pod]] = {}
    for p in view.pods:
        if p.job and p.gpus > 0 and p.phase is PodPhase.RUNNING:
            out.setdefault(p.job, []).append(p)
    return out


@dataclass(frozen=True)
class _Seen:
    """Per pod key: known points after the pod's own window start (`lows`), unreadable points in
    the window, its newest point at all; and the fleet's newest step."""

    known: Mapping[str, int]
    unread: Mapping[str, int]
    freshest: Mapping[str, float]
    newest: float | None


def _seen(pods: History, start: float, lows: Mapping[str, float]) -> _Seen:
    """What the per-pod matrix (`prometheus.fold` cells: NaN no point, < 0 unreadable) holds for
    the pods in `lows`: only the recent columns are scanned, plus each row's newest point."""
    newest = pods.newest()
    if newest is None:
        return _Seen({}, {}, {}, None)
    times = pods.times()
    span = columns_between(times, start)
    where = {k: i for i, k in enumerate(pods.keys)}
    keys = [k for k in lows if k in where]
    rows = np.array([where[k] for k in keys], dtype=np.intp)
    recent = pods.values[rows, span]
    last = pods.last_columns()[rows]
    low = np.array([lows[k] for k in keys], dtype=np.float64)
    counted = ((recent >= 0) & (times[span][None, :] > low[:, None])).sum(axis=1)
    unread = (recent < 0).sum(axis=1)
    return _Seen(
        {k: int(n) for k, n in zip(keys, counted, strict=True)},
        {k: int(n) for k, n in zip(keys, unread, strict=True) if n},
        {k: float(times[c]) for k, c in zip(keys, last, strict=True) if c >= 0},
        newest,
    )


def unknown_usage(pods: History, view: ClusterView, recent: Recent) -> dict[str, str]:
    """Job key -> why its recent usage cannot be known; jobs not listed are fully measured.
    `pods` is the reader's per-pod history (`prometheus.fold`)."""
    running = running_gpu_pods(view)
    lows = {
        p.key: max(recent.start, p.start_time + STARTUP_STEPS * recent.step)
        for members in running.values()
        for p in members
    }
    seen = _seen(pods, recent.start, lows)
    out: dict[str, str] = {}
    for job, members in sorted(running.items()):
        gaps = (_pod_gap(p, seen, lows[p.key], recent) for p in sorted(members, key=_key))
        why = [g for g in gaps if g]
        if why:
            out[job] = "; ".join(why)
    return out


def _key(p: Pod) -> str:
    return p.key


def _pod_gap(p: Pod, seen: _Seen, low: float, recent: Recent) -> str:
    """Why one pod's recent usage is not fully known; empty when it is."""
    newest, last = seen.newest, seen.freshest.get(p.key)
    if newest is None or last is None:
        return f"{p.key}: no utilization series"
    if recent.fresh_since is not None and last < recent.fresh_since:
        return f"{p.key}: no sample for {format_duration(newest - last)}"
    if seen.unread.get(p.key):
        n = seen.unread[p.key]
        return f"{p.key}: GPU unreadable at {n} recent step(s) (allocated, no utilization)"
    expected = int(np.floor((newest - low) / recent.step + 1e-9))
    known = seen.known.get(p.key, 0)
    if expected > 0 and known < expected:
        return f"{p.key}: {expected - known} of {expected} recent samples missing"
    return ""
