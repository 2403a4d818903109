"""When the exporter is alive, when it is ready, and what it serves once its data is stale.

Liveness (`/healthz`): a collect cycle completed (successfully or not) within `STALE_CYCLES`
cycle lengths, the cycle length being the collect interval or, on a node where a cycle takes
longer, the last cycle's duration. A call into a wedged driver (a GPU fallen off the bus) never
returns; the loop waits on it, so no cycle completes and the kubelet restarts the pod. Before the
first cycle completes the bound is at least `STARTUP_GRACE_S`: initializing NVML on a large node
without persistence mode can take tens of seconds.

Readiness (`/readyz`): the data served was collected within the same bound. Failing cycles
(exceptions) leave the previous snapshot served, so the exporter stays alive but stops being ready
as that snapshot ages.

Stale data is not served as current: once the served snapshot is older than the bound, it is
served without device values and without per-pod utilization, memory and process counts; the
pods' `gpu_pod_allocated` and the self-metrics stay. A pod whose last known utilization was 0
would otherwise keep reading idle while nobody measures it. Pure functions.
"""

from __future__ import annotations

import math
from dataclasses import replace
from types import MappingProxyType

from exporter.model import NodeSnapshot

STALE_CYCLES = 3
STARTUP_GRACE_S = 60.0


def cycle_bound(interval: float, last_duration: float | None) -> float:
    """How old the last completed cycle / the served data may be."""
    return STALE_CYCLES * max(interval, last_duration or 0.0)


def liveness(
    now: float,
    started_at: float,
    last_completed_at: float | None,
    interval: float,
    last_duration: float | None,
) -> str | None:
    """None when alive, else why not."""
    bound = cycle_bound(interval, last_duration)
    if last_completed_at is None:
        waited = now - started_at
        if waited > max(bound, STARTUP_GRACE_S):
            return f"no collect cycle has completed in {waited:.0f} s since start"
        return None
    age = now - last_completed_at
    if age > bound:
        return f"the last collect cycle completed {age:.1f} s ago (limit {bound:.1f} s)"
    return None


def readiness(
    now: float, taken_at: float | None, interval: float, last_duration: float | None
) -> str | None:
    """None when ready, else why not."""
    if taken_at is None:
        return "waiting for the first collect cycle"
    age = now - taken_at
    bound = cycle_bound(interval, last_duration)
    if age > bound:
        return f"the data served was collected {age:.1f} s ago (limit {bound:.1f} s)"
    return None


def without_measurements(snapshot: NodeSnapshot) -> NodeSnapshot:
    """Pure: the snapshot with every measured value taken out (identities and allocations kept),
    for serving once it is stale."""
    devices = tuple(
        replace(d, values=MappingProxyType({}), processes=None, xid_counts=MappingProxyType({}))
        for d in snapshot.devices
    )
    pods = tuple(
        replace(p, utilization=math.nan, memory_bytes=None, processes=None) for p in snapshot.pods
    )
    return replace(snapshot, devices=devices, pods=pods)
