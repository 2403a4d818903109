"""What Kueue's Workloads wait for: pending demand, by ClusterQueue. Pure.

An active, unfinished Workload that holds no quota waits for all its pod sets
(`spec.podSets[]`: `count` pods of `template`), in the ClusterQueue its LocalQueue names, for the
job that owns it (kubernetes-sigs/kueue apis/kueue/v1beta2/workload_types.go). One Kueue admitted
waits for the devices its job's pods are not bound to yet: Kueue admits on quota, and releases an
evicted job's quota once the job has no active pods, while pods still terminating keep their
devices (kueue keps/6143-pod-integration-fast-quota-release), so an admitted job's pods may wait.
A Workload waits from its creation, or from its latest requeue or admission.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from reclaimer.kube.objects import fields as f
from reclaimer.kube.objects.gangs import is_live
from reclaimer.kube.objects.kueue import (
    BAD,
    FINISHED,
    QUOTA_RESERVED,
    REQUEUED,
    condition,
    facts,
    owner_key,
    queue_targets,
)
from reclaimer.model import PendingDemand, Pod

Obj = f.Obj


def _slots(wl: Obj) -> f.Slots:
    total = f.Slots()
    for ps in f.dig(wl, "spec", "podSets") or []:
        count = f.int_field((ps or {}).get("count"), 1)
        total += count * f.pod_spec_slots(f.dig(ps, "template", "spec"))
    return total


def _since(wl: Obj) -> float:
    """When it started waiting: created, or requeued (after an eviction) or admitted later
    than that (an admitted Workload waits for devices from then on)."""
    since = f.created_at(wl)
    for c in f.dig(wl, "status", "conditions") or []:
        live = isinstance(c, dict) and c.get("status") == "True"
        if live and c.get("type") in (REQUEUED, QUOTA_RESERVED):
            since = max(since, f.timestamp(c.get("lastTransitionTime")) or 0.0)
    return since


@dataclass(frozen=True)
class Bound:
    """A job's pods bound to nodes and not on their way out, and the device slots they hold."""

    pods: int = 0
    slots: int = 0


def demand(wl: Obj, targets: Mapping[str, str], bound: Bound | None = None) -> PendingDemand | None:
    """What an active, unfinished Workload waits for; None when nothing.

    One that holds no quota waits for all its pod sets. One Kueue admitted waits for the
    devices its pods have not been bound to yet (`bound`: its job's): Kueue admits on quota,
    and releases an evicted job's quota once the job has no active pods, while pods still
    terminating keep their devices, so an admitted job's pods may wait for them."""
    info = facts(wl, targets)
    if not info.active or condition(wl, FINISHED) or not info.cluster_queue:
        return None
    need = _slots(wl)
    pods = sum(f.int_field((ps or {}).get("count"), 1) for ps in f.dig(wl, "spec", "podSets") or [])
    gpus, mig = need.total, need.mig
    if info.admitted:
        held = bound or Bound()
        if held.pods >= pods:
            return None
        gpus, pods = need.total - held.slots, pods - held.pods
        mig = mig if held.slots == 0 else {}
    if gpus <= 0:
        return None
    owner = owner_key(wl)
    return PendingDemand(
        queue=info.cluster_queue,
        job=owner[0] if owner else f.key(wl),
        gpus=gpus,
        mig=mig,
        min_member=max(1, pods),
        since=_since(wl),
        priority=f.int_field(f.dig(wl, "spec", "priority"), 0),
    )


def pending(
    wls: Sequence[Obj],
    lqs: Sequence[Obj],
    bound: Mapping[str, Bound],
    problems: list[str],
) -> list[PendingDemand]:
    """Every Workload waiting for quota or devices (`demand`; `bound`: job key -> its pods
    bound); one that cannot be read is a problem."""
    targets = queue_targets(lqs)
    out = []
    for wl in wls:
        owner = owner_key(wl) if isinstance(f.meta(wl).get("ownerReferences"), list) else None
        try:
            found = demand(wl, targets, bound.get(owner[0]) if owner else None)
        except BAD as exc:
            problems.append(f"Workload {f.key(wl)}: skipped, {exc}")
            continue
        if found is not None:
            out.append(found)
    return out


def bound_pods(pods: Sequence[Pod]) -> dict[str, Bound]:
    """Job key -> its live pods bound to a node and not on their way out."""
    out: dict[str, Bound] = {}
    for p in pods:
        if p.job is not None and p.node and not p.releasing and is_live(p):
            was = out.get(p.job, Bound())
            out[p.job] = Bound(was.pods + 1, was.slots + p.gpus)
    return out
