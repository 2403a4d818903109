"""Plain Kubernetes object dicts -> the model's `ClusterView`. Pure: no client, no clock.

Input is a `ClusterObjects` (what `read.py` lists from the API, or what `group_by_kind` finds in
a `kubectl get -o yaml` dump; both live in `cluster_objects`, re-exported here). The workloads
become gangs here, each pod is placed in one (`placement`), and queues and nodes are decoded. One
bad object becomes one `problems` entry and is left out (`skipping.safe`); it never fails the
whole view. GPU amounts come from `nvidia.com/gpu` and `nvidia.com/mig-*`
quantities (`reclaimer.devices`); a node's time-slice replicas from the device-plugin ConfigMap key
its `nvidia.com/device-plugin.config` label names.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping, Sequence
from functools import partial
from types import MappingProxyType

from reclaimer.kube.objects import (
    crashes,
    disruption,
    dra,
    dra_templates,
    gangs,
    kinds,
    kueue,
    kueue_demand,
    placement,
    trainjob,
    workloads,
)
from reclaimer.kube.objects import fields as f
from reclaimer.kube.objects import resources as r
from reclaimer.kube.objects.cluster_objects import KIND_FIELDS, ClusterObjects, group_by_kind
from reclaimer.kube.objects.nodes import device_plugin_data, node
from reclaimer.kube.objects.owners import OwnerIndex
from reclaimer.kube.objects.skipping import safe
from reclaimer.model import ClusterView, Job, Node, Pod, Queue, QueueState

__all__ = ["KIND_FIELDS", "ClusterObjects", "group_by_kind", "queue", "to_cluster_view"]

Obj = f.Obj


def queue(obj: Obj) -> Queue:
    spec = obj.get("spec") or {}
    state = str(f.dig(obj, "status", "state") or QueueState.OPEN.value)
    reclaimable = spec.get("reclaimable")
    return Queue(
        name=f.name(obj),
        weight=f.int_field(spec.get("weight"), 1),
        deserved_gpus=f.gpu_amount(spec.get("deserved")),
        guarantee_gpus=f.gpu_amount(f.dig(spec, "guarantee", "resource")) or 0.0,
        capability_gpus=f.gpu_amount(spec.get("capability")),
        reclaimable=True if reclaimable is None else bool(reclaimable),
        state=QueueState(state) if state in QueueState._value2member_map_ else QueueState.OPEN,
        priority=f.int_field(spec.get("priority"), 0),
    )


def _jobs(
    objs: ClusterObjects, owners: OwnerIndex, prio: Mapping[str, int], problems: list[str]
) -> dict[str, Job]:
    """Every top workload as a gang; one owned by another known workload (a JobSet's Jobs) is
    part of that one's gang, not a gang of its own."""
    jobs: dict[str, Job] = {}
    made = [
        (obj, partial(gangs.volcano_job, obj, prio, objs.commands)) for obj in objs.volcano_jobs
    ]
    made += [
        (obj, partial(workloads.build, obj, prio))
        for obj in objs.workloads
        if owners.resolve(obj).key is None
    ]
    for obj, make in made:
        kind = str(obj.get("kind", "?"))
        job = safe(problems, f"{kind} {f.key(obj)}", make)
        if job is None:
            continue
        if job.key in jobs:
            problems.append(f"{kind} {job.key}: skipped, another gang has the same key")
            continue
        jobs[job.key] = job
    _size_trainjobs(jobs, objs.workloads, owners, prio, problems)
    if objs.kueue_workloads:
        by_key = {f.key(obj): obj for obj in objs.workloads}
        targets = kueue.queue_targets(objs.local_queues)
        kueue.join(jobs, by_key, objs.kueue_workloads, targets, problems)
    return jobs


def _size_trainjobs(
    jobs: dict[str, Job],
    objs: Sequence[Obj],
    owners: OwnerIndex,
    prio: Mapping[str, int],
    problems: list[str],
) -> None:
    """Each TrainJob's gang sized by the JobSet it owns (`kube.trainjob`)."""
    for obj in objs:
        owner = f.controller_owner(obj) if obj.get("kind") == kinds.JOBSET.resource.kind else None
        if owner is None or owner.get("kind") != kinds.TRAIN_JOB.resource.kind:
            continue
        key = f"{f.namespace(obj)}/{owner.get('name')}"
        job = jobs.get(key)
        if job is None or job.kind is not kinds.TRAIN_JOB.job_kind:
            continue
        if owner.get("uid") and job.uid and owner.get("uid") != job.uid:
            continue  # a JobSet left over from an earlier TrainJob of the same name
        make = partial(workloads.jobset, obj, kinds.JOBSET, prio)
        jobs[key] = trainjob.sized_by_jobset(job, obj, safe(problems, f"JobSet {key}", make))


def _with_budgets(jobs: Sequence[Job], pods: Sequence[Pod], pdbs: Sequence[Obj]) -> list[Job]:
    """Each job with the PodDisruptionBudget (if any) that forbids stopping it whole."""
    if not pdbs:
        return list(jobs)
    members: dict[str, list[Pod]] = {}
    for p in pods:
        if p.job is not None:
            members.setdefault(p.job, []).append(p)
    out = []
    for job in jobs:
        block = disruption.blocking_budget(job.key, members.get(job.key, ()), pdbs)
        out.append(dataclasses.replace(job, disruption_block=block) if block else job)
    return out


def _last_actions(jobs: Iterable[Job], nodes: Sequence[Obj]) -> dict[str, float]:
    out: dict[str, float] = {}
    for job in jobs:
        notes = job.annotations
        if job.unfinished_stop:  # a stop that did not happen starts no cool-down
            notes = {k: v for k, v in notes.items() if k not in (r.SUSPENDED_AT, r.EVICTED_AT)}
        t = gangs.last_action_time(notes)
        if t is not None:
            out[job.key] = t
    for obj in nodes:
        t = gangs.last_action_time(f.annotations_of(obj))
        if t is not None:
            out[f.name(obj)] = t
    return out


def to_cluster_view(
    objs: ClusterObjects,
    taken_at: float,
    device_plugin: r.ConfigMapRef | None = None,
    gpu_classes: dra.GpuClasses | None = None,
) -> ClusterView:
    """The model's view of the cluster; `device_plugin` None = find the ConfigMap by its keys;
    `gpu_classes`: which DRA drivers and device classes are GPUs (NVIDIA's by default)."""
    problems = list(objs.problems)
    claims = dra.count_claims(
        objs.pods,
        claims=objs.resource_claims,
        templates=objs.resource_claim_templates,
        slices=objs.resource_slices,
        device_classes=objs.device_classes,
        gpus=gpu_classes,
    )
    problems += claims.problems
    priorities: dict[str, int] = {}
    for pc in objs.priority_classes:
        priorities[f.name(pc)] = f.int_field(pc.get("value"), 0)
    owners = OwnerIndex([*objs.workloads, *objs.volcano_jobs, *objs.controllers])
    ctx = placement.Context(
        _jobs(_with_template_claims(objs, gpu_classes), owners, priorities, problems),
        {f.key(pg): pg for pg in objs.podgroups},
        priorities,
        owners,
        problems=problems,
        claims=claims,
    )
    for pg in objs.podgroups:  # a PodGroup its job owns names the queue Volcano uses
        owner_key, pg_queue = owners.resolve(pg).key, f.dig(pg, "spec", "queue")
        if owner_key in ctx.jobs and pg_queue:
            ctx.group_queues[owner_key] = str(pg_queue)
    for obj in objs.pods:
        safe(problems, f"Pod {f.key(obj)}", partial(placement.place_pod, obj, ctx))
    crashed = crashes.of_pods(objs.pods, problems)
    placement.pending_podgroups(ctx)
    queues = _queues(objs, problems)
    bound = kueue_demand.bound_pods(ctx.pods)
    waiting = kueue_demand.pending(objs.kueue_workloads, objs.local_queues, bound, problems)
    if ctx.unmanaged:
        problems.append(f"{len(ctx.unmanaged)} GPU pods in no workload the reclaimer can stop")
    gangs_ = gangs.attach_pods(ctx.jobs, ctx.pods, ctx.pod_queues, ctx.group_queues)
    jobs, waiting = kueue.apart_from_volcano(
        _with_budgets(gangs_, ctx.pods, objs.pdbs), waiting, queues
    )
    ctx.pending += waiting
    return ClusterView(
        taken_at=taken_at,
        queues=queues,
        jobs=tuple(jobs),
        pods=tuple(sorted(ctx.pods, key=lambda p: p.key)),
        nodes=_nodes(
            objs, device_plugin, jobs, ctx.pods, problems, dra_counts=(claims, gpu_classes)
        ),
        pending=tuple(sorted(ctx.pending, key=lambda d: (d.queue, d.since, d.job))),
        last_actions=MappingProxyType(_last_actions(jobs, objs.nodes)),
        problems=tuple(problems),
        unmanaged=MappingProxyType(dict(sorted(ctx.unmanaged.items()))),
        crashes=crashed,
    )


def _with_template_claims(objs: ClusterObjects, gpus: dra.GpuClasses | None) -> ClusterObjects:
    """The workloads and Volcano Jobs as their GPU count reads them, with the GPUs their pod
    templates' ResourceClaimTemplates ask for (`dra_templates.with_claimed_gpus`)."""
    slots = dra_templates.template_slots(
        objs.resource_claim_templates, objs.resource_slices, objs.device_classes, gpus
    )
    if not slots:
        return objs
    return dataclasses.replace(
        objs,
        workloads=[dra_templates.with_claimed_gpus(o, slots) for o in objs.workloads],
        volcano_jobs=[dra_templates.with_claimed_gpus(o, slots) for o in objs.volcano_jobs],
    )


def _queues(objs: ClusterObjects, problems: list[str]) -> tuple[Queue, ...]:
    found = [safe(problems, f"Queue {f.name(o)}", partial(queue, o)) for o in objs.queues]
    taken = {q.name for q in found if q is not None}
    found += kueue.queues(objs.cluster_queues, taken, problems)
    return tuple(sorted((q for q in found if q is not None), key=lambda q: q.name))


def _nodes(
    objs: ClusterObjects,
    ref: r.ConfigMapRef | None,
    jobs: Sequence[Job],
    pods: Sequence[Pod],
    problems: list[str],
    *,
    dra_counts: tuple[dra.ClaimCounts, dra.GpuClasses | None],
) -> tuple[Node, ...]:
    wanted = {f.labels_of(n).get(r.DEVICE_PLUGIN_CONFIG_LABEL, "") for n in objs.nodes} - {""}
    data = device_plugin_data(objs.configmaps, ref, wanted)
    classes: dict[str, set[str]] = {}
    job_class = {j.key: j.workload_class for j in jobs if j.workload_class}
    for p in pods:
        if p.node and p.job in job_class:
            classes.setdefault(p.node, set()).add(job_class[p.job])
    offers = dra.node_offers(objs.resource_slices, dra_counts[1] or dra.GpuClasses())
    out = []
    for obj in objs.nodes:
        name = f.name(obj)
        make = partial(node, obj, data, classes.get(name, ()), problems, offers.get(name))
        n = safe(problems, f"Node {name}", make)
        if n is not None:
            out.append(dra.with_claims(n, dra_counts[0]))
    return tuple(sorted(out, key=lambda n: n.name))
