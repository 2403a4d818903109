"""The object dicts a cluster view is built from, sorted by kind. Pure: no client, no clock.

`ClusterObjects` holds one list per kind the reclaimer reads (what `read.py` lists from the API).
`group_by_kind` fills one from a `kubectl get -o yaml` dump: `KIND_FIELDS` maps each object's API
group and kind (not its version: no two kinds read here share a name within a group) to the list
it joins; objects of any other kind are counted in a note and dropped.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from reclaimer.kube.objects import fields as f
from reclaimer.kube.objects import kinds, kueue
from reclaimer.kube.objects import resources as r

Obj = f.Obj


@dataclass(frozen=True)
class ClusterObjects:
    """Object dicts by kind; `problems` carries what reading already knows (missing CRDs)."""

    queues: Sequence[Obj] = ()
    podgroups: Sequence[Obj] = ()
    volcano_jobs: Sequence[Obj] = ()
    commands: Sequence[Obj] = ()  # Volcano Commands not yet taken up by its job controller
    workloads: Sequence[Obj] = ()  # every suspendable kind (`kube.kinds.SUSPENDABLE`)
    controllers: Sequence[Obj] = ()  # between pods and workloads (`kube.kinds.OWNER_CHAIN`)
    pods: Sequence[Obj] = ()
    nodes: Sequence[Obj] = ()
    configmaps: Sequence[Obj] = ()
    pdbs: Sequence[Obj] = ()
    priority_classes: Sequence[Obj] = ()
    problems: tuple[str, ...] = ()
    # Dynamic Resource Allocation (`resource.k8s.io`, `kube.objects.dra`)
    resource_claims: Sequence[Obj] = ()
    resource_claim_templates: Sequence[Obj] = ()
    resource_slices: Sequence[Obj] = ()
    device_classes: Sequence[Obj] = ()
    cluster_queues: Sequence[Obj] = ()  # Kueue (`kube.objects.kueue`)
    local_queues: Sequence[Obj] = ()
    kueue_workloads: Sequence[Obj] = ()


# (group, kind) -> ClusterObjects field; versions are not checked, kinds are unambiguous here
KIND_FIELDS: Mapping[tuple[str, str], str] = {
    (r.QUEUES.group, "Queue"): "queues",
    (r.PODGROUPS.group, "PodGroup"): "podgroups",
    (r.VOLCANO_JOBS.group, "Job"): "volcano_jobs",
    (r.VOLCANO_COMMANDS.group, "Command"): "commands",
    **{w.key: "workloads" for w in kinds.SUSPENDABLE},
    **{(c.group, c.kind): "controllers" for c in kinds.OWNER_CHAIN},
    ("", "Pod"): "pods",
    ("", "Node"): "nodes",
    ("", "ConfigMap"): "configmaps",
    ("policy", "PodDisruptionBudget"): "pdbs",
    (r.PRIORITY_CLASSES.group, "PriorityClass"): "priority_classes",
    (r.DRA_GROUP, "ResourceClaim"): "resource_claims",
    (r.DRA_GROUP, "ResourceClaimTemplate"): "resource_claim_templates",
    (r.DRA_GROUP, "ResourceSlice"): "resource_slices",
    (r.DRA_GROUP, "DeviceClass"): "device_classes",
    (kueue.GROUP, "ClusterQueue"): "cluster_queues",
    (kueue.GROUP, "LocalQueue"): "local_queues",
    (kueue.GROUP, "Workload"): "kueue_workloads",
}


def group_by_kind(docs: Iterable[Any]) -> tuple[ClusterObjects, list[str]]:
    """Sort object dicts into a `ClusterObjects`; kinds it does not use are counted, not kept."""
    buckets: dict[str, list[Obj]] = {name: [] for name in set(KIND_FIELDS.values())}
    ignored: dict[str, int] = {}
    for doc in docs:
        api = str(doc.get("apiVersion", ""))
        group = api.rsplit("/", 1)[0] if "/" in api else ""
        kind = str(doc.get("kind", ""))
        target = KIND_FIELDS.get((group, kind))
        if target is None:
            ignored[kind or "<no kind>"] = ignored.get(kind or "<no kind>", 0) + 1
        else:
            buckets[target].append(doc)
    notes = [f"ignored {n} object(s) of kind {k}" for k, n in sorted(ignored.items())]
    return ClusterObjects(**buckets), notes  # type: ignore[arg-type]
