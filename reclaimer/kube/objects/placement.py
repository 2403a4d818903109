"""Each pod placed in the view: its gang, its queue, or the demand it is waiting as.

`place_pod` resolves a pod's owning workload (through `OwnerIndex`, or through its Volcano
PodGroup when the pod is bare), counts the GPUs its ResourceClaims hold, and records into the
`Context` shared across one conversion: a running bare GPU pod becomes a gang of its own, a
pending one without a PodGroup becomes pending demand, and a GPU pod run by a kind the reclaimer
cannot stop is listed as unmanaged with the reason. `pending_podgroups` then turns each PodGroup
still waiting (`gangs.pending_from_podgroup`), unless its job is suspended, into pending demand.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import partial

from reclaimer.devices import slots_by_resource
from reclaimer.kube.objects import dra, gangs
from reclaimer.kube.objects import fields as f
from reclaimer.kube.objects import resources as r
from reclaimer.kube.objects.owners import OwnerIndex
from reclaimer.kube.objects.skipping import safe
from reclaimer.model import Job, PendingDemand, Pod

Obj = f.Obj


def place_pod(
    obj: Obj,
    ctx: Context,
) -> None:
    owner = ctx.owners.resolve(obj)
    pg_name = gangs.podgroup_name(obj)
    pg = ctx.podgroups.get(f"{f.namespace(obj)}/{pg_name}") if pg_name else None
    if owner.key is None and not owner.other and pg is not None:
        found = ctx.owners.resolve(pg)  # Volcano's PodGroup of a bare pod is owned by the pod
        owner = found if found.key is not None else owner
    claimed = ctx.claims.by_pod.get(f.key(obj))
    slots = f.Slots(claimed) if claimed else None
    pod = gangs.pod(obj, owner.key if owner.key in ctx.jobs else None, slots)
    if not gangs.is_live(pod) or (pod.gpus == 0 and pod.job is None):
        return
    queue = gangs.pod_queue(obj, pg)
    ctx.pod_queues[pod.key] = queue
    if pod.job is not None and pg is not None and f.dig(pg, "spec", "queue"):
        ctx.group_queues.setdefault(pod.job, str(f.dig(pg, "spec", "queue")))
    if owner.key is None and not owner.other:  # a bare GPU pod
        if pod.node:
            ctx.jobs[pod.key] = gangs.bare_pod_job(obj, pod, queue, ctx.priorities)
            pod = dataclasses.replace(pod, job=pod.key)
        elif pg is None:
            demand = PendingDemand(queue, pod.key, pod.gpus, since=pod.start_time, mig=pod.mig)
            ctx.pending.append(demand)
    elif pod.job is None and pod.node and pod.gpus > 0:
        ctx.unmanaged[pod.key] = (
            f"run by {owner.other}: not a kind the reclaimer can stop (its controller would "
            "recreate the pod)"
            if owner.other
            else f"its {owner.kind.resource.kind if owner.kind else 'workload'} {owner.key} "
            "is finished or could not be read"
        )
    ctx.pods.append(pod)


@dataclass
class Context:
    jobs: dict[str, Job]
    podgroups: dict[str, Obj]
    priorities: Mapping[str, int]
    owners: OwnerIndex
    pods: list[Pod] = field(default_factory=list)
    pending: list[PendingDemand] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    pod_queues: dict[str, str] = field(default_factory=dict)
    group_queues: dict[str, str] = field(default_factory=dict)  # job key -> its PodGroup's queue
    unmanaged: dict[str, str] = field(default_factory=dict)  # GPU pod key -> why in no gang
    claims: dra.ClaimCounts = field(default_factory=dra.no_claims)


def pending_podgroups(ctx: Context) -> None:
    members: dict[str, f.Slots] = {}
    for p in ctx.pods:
        pg_name = p.annotations.get(r.GROUP_NAME_KEY) or p.labels.get(r.GROUP_NAME_KEY)
        if pg_name:
            k = f"{p.namespace}/{pg_name}"
            members[k] = members.get(k, f.Slots()) + f.Slots(slots_by_resource(p.gpus, p.mig))
    for pg_key, pg in sorted(ctx.podgroups.items()):
        owner_key = ctx.owners.resolve(pg).key
        job = ctx.jobs.get(owner_key) if owner_key else None
        if job is not None and job.suspended:
            continue
        make = partial(
            gangs.pending_from_podgroup, pg, job, members.get(pg_key, f.Slots()), ctx.priorities
        )
        demand = safe(ctx.problems, f"PodGroup {pg_key}", make)
        if demand is not None:
            ctx.pending.append(demand)
