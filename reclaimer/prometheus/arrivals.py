"""When pods arrived and which ones waited for GPUs, from kube-state-metrics. Pure.

The per-pod GPU history says when a pod ran, not when it asked to: `export-history` reads the
arrivals from kube-state-metrics series in the same Prometheus, with four instant queries at
the window's end (one when the first finds no kube-state-metrics). `kube_pod_created` (gauge,
the pod's creation Unix time) gives each pod's creation; a pod recreated under one name keeps
its latest. Pending GPU demand is each pod's summed
`kube_pod_container_resource_requests{resource="nvidia_com_gpu"}` (kube-state-metrics writes
`nvidia.com/gpu` as `nvidia_com_gpu`, unit `integer`) while its
`kube_pod_status_phase{phase="Pending"}` is 1; a subquery on the `step` grid gives the first and
the last step each pod was seen pending (the steps lie in the window, so a pod still pending at
its end is cut there) and how many GPUs it asked for then. MIG profiles (`nvidia_com_mig_*`) are
not read: the trace has no MIG slices. No `kube_pod_created` series at all means no
kube-state-metrics: the export then keeps arrivals equal to starts (`Arrivals.found` false).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from reclaimer.prometheus.series import QueryResult

POD_CREATED = "kube_pod_created"
POD_REQUESTS = "kube_pod_container_resource_requests"
POD_PHASE = "kube_pod_status_phase"
GPU_RESOURCE = "nvidia_com_gpu"  # `nvidia.com/gpu`, as kube-state-metrics sanitizes the label
NO_KUBE_STATE = (
    "kube-state-metrics not found in Prometheus (no kube_pod_created series in the window): each "
    "pod arrives when it started, so the export shows no waiting and no pod that never ran"
)

PodKey = tuple[str, str]  # (namespace, pod)


@dataclass(frozen=True)
class Pending:
    """A pod seen Pending while asking for GPUs: the first and last step it was pending."""

    gpus: int
    first: float
    last: float


@dataclass(frozen=True)
class Arrivals:
    """What kube-state-metrics says about the window [start, end]."""

    start: float
    end: float
    found: bool  # kube-state-metrics' series are in Prometheus
    created: Mapping[PodKey, float] = field(default_factory=dict)  # creation Unix time
    pending: Mapping[PodKey, Pending] = field(default_factory=dict)


def none_found(start: float, end: float) -> Arrivals:
    return Arrivals(start, end, found=False)


def created_query(window: float) -> str:
    return f"max by (namespace, pod) (max_over_time({POD_CREATED}[{int(window)}s]))"


def _pending_gpus() -> str:
    """Per pod: GPUs requested, at the times its phase is Pending."""
    requests = f'sum by (namespace, pod) ({POD_REQUESTS}{{resource="{GPU_RESOURCE}"}}) > 0'
    pending = f'max by (namespace, pod) ({POD_PHASE}{{phase="Pending"}}) == 1'
    return f"({requests}) and on (namespace, pod) ({pending})"


def pending_queries(window: float, step: float) -> tuple[str, str, str]:
    """GPUs asked for, first and last step pending, per pod pending in the window."""
    over = f"[{int(window)}s:{int(step)}s]"
    demand = _pending_gpus()
    return (
        f"max by (namespace, pod) (max_over_time(({demand}){over}))",
        f"min by (namespace, pod) (min_over_time(timestamp({demand}){over}))",
        f"max by (namespace, pod) (max_over_time(timestamp({demand}){over}))",
    )


def per_pod(result: QueryResult) -> dict[PodKey, float]:
    """An instant vector `by (namespace, pod)` -> its values; series without a pod are ignored."""
    return {
        (s.labels.get("namespace", ""), s.labels["pod"]): s.points[-1][1]
        for s in result.series
        if s.labels.get("pod") and s.points
    }


def arrivals(
    start: float,
    end: float,
    *,
    created: QueryResult,
    gpus: QueryResult,
    first: QueryResult,
    last: QueryResult,
) -> Arrivals:
    """The four answers joined per pod; a pod pending in only some of them is left out."""
    firsts, lasts = per_pod(first), per_pod(last)
    pending = {
        key: Pending(int(n), firsts[key], lasts[key])
        for key, n in per_pod(gpus).items()
        if key in firsts and key in lasts and n >= 1
    }
    made = per_pod(created)
    return Arrivals(start, end, found=bool(made), created=made, pending=pending)
