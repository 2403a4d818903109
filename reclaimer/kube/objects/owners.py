"""From a pod (or PodGroup) up to the workload that owns it, through controller references. Pure.

A pod's controller `ownerReference` names what created it; that object may itself be owned:
pod -> StatefulSet -> Notebook, pod -> Job -> JobSet, pod -> RayCluster -> RayJob. The reclaimer
must stop the topmost workload it knows how to stop (`kube.kinds`): suspending a JobSet's Job
would only have the JobSet recreate it, suspending a TrainJob's JobSet would only have the
TrainJob set it back. So the chain is walked up through every object listed (workloads and the
intermediate controllers), and the highest known workload wins; a known workload under a
controller the reclaimer does not know is its own gang, which `kube.management` then keeps from
being stopped unless that owner is known to leave it alone (a batch Job of a CronJob). When no
known workload is on the chain, the first controller's kind is reported, with the topmost
listed owner above it (a StatefulSet of an unknown CRD), so the operator learns which kind holds
the GPUs (a Deployment's ReplicaSet, an unknown CRD) and that it is left alone.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from reclaimer.kube.objects import fields as f
from reclaimer.kube.objects import kinds

Obj = Mapping[str, Any]
MAX_DEPTH = 6  # owner chains are short; a cycle (a broken object) must not loop forever


@dataclass(frozen=True)
class Owner:
    """Where a pod belongs: its workload (`key`, `kind`), or why it belongs to none."""

    key: str | None = None
    kind: kinds.WorkloadKind | None = None
    other: str = ""  # the kind of a controller the reclaimer does not stop, e.g. "ReplicaSet"


def _group(api_version: str) -> str:
    return api_version.rsplit("/", 1)[0] if "/" in api_version else ""


class OwnerIndex:
    """Every listed controller object, by (namespace, group, kind, name)."""

    def __init__(self, objects: Iterable[Obj]) -> None:
        self._by_ref: dict[tuple[str, str, str, str], Obj] = {}
        for obj in objects:
            group = _group(str(obj.get("apiVersion", "")))
            ref = (f.namespace(obj), group, str(obj.get("kind", "")), f.name(obj))
            self._by_ref[ref] = obj

    def resolve(self, obj: Obj) -> Owner:
        """The topmost known workload above `obj`, else the first controller's kind."""
        namespace = f.namespace(obj)
        found = Owner()
        first_other, top_other = "", ""
        ref = f.controller_owner(obj)
        for _ in range(MAX_DEPTH):
            if ref is None:
                break
            api, kind, name = (
                str(ref.get("apiVersion", "")),
                str(ref.get("kind", "")),
                ref.get("name"),
            )
            known = kinds.of_owner(api, kind)
            if known is not None:
                found = Owner(f"{namespace}/{name}", known)
            elif not first_other:
                first_other = f"{kind} ({api})"
            else:
                top_other = f"{kind} {namespace}/{name} ({api})"
            parent = self._by_ref.get((namespace, _group(api), kind, str(name)))
            ref = f.controller_owner(parent) if parent is not None else None
        if found.key is None and first_other:
            above = f" owned by {top_other}" if top_other else ""
            return Owner(other=first_other + above)
        return found
