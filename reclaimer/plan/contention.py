"""Contention relief: a busy reclaimable job time-sliced with a busy guaranteed one is stopped.

Time-slicing gives every busy process on a GPU an equal share of its time, with no per-pod
weight (NVIDIA's time-slicing docs; REFERENCE 5), so a guaranteed job sharing a GPU with a busy
neighbour runs at about half speed or less. Which pods share a GPU comes from the exporter's
per-pod readings (`Snapshot.pod_gpus`): a pod's series carry the physical GPU's `UUID` (a replica
`GPU-<uuid>::<n>` counts as its device), so rows with the same (node, gpu) share one device.

On each such device where a pod of a guaranteed job (its queue not reclaimable) reads busy at or
above `timeSlicing.contentionBusyAbove`, every running job of a reclaimable queue with a pod there
at or above it too is a candidate; it is stopped `ContentionRelief` when every safety rule of any
stop passes (`victims.safety_skip`: opt-outs, PDBs, minimum runtime, cool-down, ...) and within the
cycle's preemption budget, shared with the preemptions that follow. No forecast is needed: the
measured contention is the reason. Two jobs whose pods share one DRA claim share its device the same
way (the driver's time-slicing or MPS); the reclaimable one is stopped though it frees no slot of
its own (`reclaimer.kube.objects.dra`). A guaranteed job is never a candidate (and the actuator
refuses to stop one). A pod whose busy reading is unknown (None) decides nothing: unknown is not
busy. Candidates are taken busiest first, then by least work lost, then by key, so the order is
fixed. Pure.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from reclaimer.decisions import Action, ActionKind, Evidence, Reason, Skip
from reclaimer.model import Job, PodGpuUsage, Queue, Snapshot
from reclaimer.plan.capacity import Placement
from reclaimer.plan.ledger import Ledger, release_job
from reclaimer.plan.limits import Budget, Taken
from reclaimer.plan.victims import safety_skip, work_lost_seconds
from reclaimer.policy.settings import Policy
from reclaimer.units import format_duration


@dataclass(frozen=True)
class Contention:
    """A reclaimable job's busiest shared device with a busy guaranteed job."""

    job: Job
    node: str
    gpu: str
    busy: float  # the reclaimable job's pod there
    guaranteed: Job  # the busiest guaranteed job there
    guaranteed_busy: float


def contentions(
    snap: Snapshot, queues: Mapping[str, Queue], threshold: float
) -> dict[str, Contention]:
    """Reclaimable job key -> its worst contention with a busy guaranteed job (pure)."""
    jobs = {j.key: j for j in snap.jobs}
    owner = {k: j.key for j in snap.jobs for k in j.pods}
    owner.update({p.key: p.job for p in snap.pods if p.job is not None})
    devices: dict[tuple[str, str], list[tuple[PodGpuUsage, Job]]] = {}
    for row in snap.pod_gpus:
        job = jobs.get(owner.get(row.pod, ""))
        if job is not None and row.busy is not None and row.busy >= threshold:
            devices.setdefault((row.node, row.gpu), []).append((row, job))
    out: dict[str, Contention] = {}
    for (node, gpu), rows in sorted(devices.items()):
        guaranteed = [(r, j) for r, j in rows if _guaranteed(j, queues)]
        if not guaranteed:
            continue
        g_row, g_job = max(guaranteed, key=lambda rj: (_busy(rj[0]), rj[1].key))
        for row, job in rows:
            if _guaranteed(job, queues) or job.suspended:
                continue
            seen = out.get(job.key)
            if seen is None or _busy(row) > seen.busy:
                out[job.key] = Contention(job, node, gpu, _busy(row), g_job, _busy(g_row))
    return out


def contended_nodes(
    snap: Snapshot, queues: Mapping[str, Queue], threshold: float
) -> frozenset[str]:
    """Nodes where a pod of a guaranteed job reads busy at or above `threshold` (pure): a job
    stopped for contention relief is not resumed into room there (`resume`)."""
    jobs = {j.key: j for j in snap.jobs}
    owner = {k: j.key for j in snap.jobs for k in j.pods}
    owner.update({p.key: p.job for p in snap.pods if p.job is not None})
    out = set()
    for row in snap.pod_gpus:
        job = jobs.get(owner.get(row.pod, ""))
        if job is not None and _guaranteed(job, queues) and _busy(row) >= threshold:
            out.add(row.node)
    return frozenset(out)


def _busy(row: PodGpuUsage) -> float:
    return row.busy if row.busy is not None else 0.0


def _guaranteed(job: Job, queues: Mapping[str, Queue]) -> bool:
    """A job whose queue is not reclaimable (a queue the cluster lacks is not guaranteed:
    nothing would be stopped for it, and nothing in it is stopped either)."""
    queue = queues.get(job.queue)
    return queue is not None and not queue.reclaimable


def plan_contention_relief(
    snap: Snapshot,
    where: Mapping[str, Placement],
    ledger: Ledger,
    budget: Budget,
    *,
    policy: Policy,
    now: float,
) -> tuple[list[Action], list[Skip]]:
    """Stops for contention relief, and skips for candidates a safety rule or limit keeps;
    books each stop in `ledger` and `budget` (both mutated)."""
    queues = {q.name: q for q in snap.queues}
    found = contentions(snap, queues, policy.time_slicing.contention_busy_above)
    lost = {k: work_lost_seconds(c.job, policy, now) for k, c in found.items()}
    order = sorted(found.values(), key=lambda c: (-c.busy, lost[c.job.key], c.job.key))
    actions: list[Action] = []
    skips: list[Skip] = []
    for c in order:
        placement = where.get(c.job.key)
        # a job whose pods share a DRA claim holds no slots of its own (the claim's devices are
        # held on the node until its last pod goes), yet its stop still relieves the contention
        if placement is None or not placement.pods_by_node:
            continue
        last = snap.last_actions.get(c.job.key)
        unsafe = safety_skip(
            c.job, queues.get(c.job.queue), placement, policy=policy, now=now, last_action=last
        )
        if unsafe is not None:
            skips.append(Skip(c.job.key, unsafe.reason, f"{_story(c)}; {unsafe.detail}"))
            continue
        taken = Taken(c.job.namespace, placement.gpus, placement.pods_by_node)
        limit = budget.blocker(taken)
        if limit is not None:
            skips.append(Skip(c.job.key, Reason.LIMIT_REACHED, f"{_story(c)}; {limit}"))
            continue
        budget.take(taken)
        release_job(c.job.queue, placement, ledger)
        actions.append(_action(c, placement, lost[c.job.key]))
    return actions, skips


def _story(c: Contention) -> str:
    return (
        f"busy {c.busy:.0%} on {c.node} GPU {c.gpu}, time-sliced with guaranteed "
        f"{c.guaranteed.key} (busy {c.guaranteed_busy:.0%})"
    )


def _action(c: Contention, placement: Placement, lost: float) -> Action:
    detail = f"{_story(c)}; frees {placement.gpus} slots; loses {format_duration(lost)} of work"
    return Action(
        kind=ActionKind.PREEMPT,
        target=c.job.key,
        reason=Reason.CONTENTION_RELIEF,
        evidence=Evidence(for_queue=c.guaranteed.queue, gpus_freed=placement.gpus, detail=detail),
        job_kind=c.job.kind,
    )
