"""Resume planning: give back what the reclaimer took, once no starved queue needs the room.

Runs after preemption planning, on the same ledger, so it sees the free slots left once this
cycle's pending jobs have been granted theirs. Jobs the reclaimer suspended
(`Job.suspended_by_reclaimer`) are taken oldest suspension first; one whose pods are still
releasing their GPUs has not finished stopping and stays as it is. One is resumed when the
reclaimer has left it alone for the job cool-down, no starved pending job still waits for room
(one that could fit the cluster at all; while one waits, free slots are its to take), its queue
stays within capability, and the whole job fits the free slots node by node, of each device
resource its pods ask for (a job asking for several is checked resource by resource: the
scheduler still needs a node with all of them); at most `maxResumesPerCycle` per cycle. Its slots
are then reserved so the next resume counts them. A job stopped for contention relief must also
fit outside the nodes where a guaranteed job is busy (`ContentionWouldReturn` otherwise): there it
would only be stopped again.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from reclaimer.decisions import Action, ActionKind, Evidence, Reason, Skip
from reclaimer.devices import amount, resource_key, slots_by_resource
from reclaimer.model import Job, Node
from reclaimer.plan.capacity import FreePool, Releasing, node_capacity, pod_shape
from reclaimer.plan.ledger import Ledger
from reclaimer.policy.settings import Policy
from reclaimer.units import format_duration


def plan_resumes(
    jobs: Sequence[Job],
    nodes: Sequence[Node],
    ledger: Ledger,
    policy: Policy,
    *,
    now: float,
    last_actions: Mapping[str, float],
    contended: frozenset[str] = frozenset(),
) -> tuple[list[Action], list[Skip]]:
    """Resume actions, oldest suspension first, and a skip for each suspended job left;
    `contended`: nodes where a guaranteed job is busy (`contention.contended_nodes`)."""
    suspended = [j for j in jobs if j.suspended and j.suspended_by_reclaimer]
    suspended.sort(key=lambda j: (last_actions.get(j.key, j.start_time), j.key))
    waiting = _still_waiting(ledger, nodes)
    actions: list[Action] = []
    skips: list[Skip] = []
    for job in suspended:
        skip = _hold(
            job, ledger, policy, now=now, last_action=last_actions.get(job.key), waiting=waiting
        ) or _contention_hold(job, ledger, contended)
        if skip is None and len(actions) >= policy.limits.max_resumes_per_cycle:
            skip = Skip(job.key, Reason.LIMIT_REACHED, "maxResumesPerCycle reached")
        if skip is not None:
            skips.append(skip)
            continue
        taken: dict[str, int] = {}
        for resource, (pod_gpus, pods) in _shapes(job).items():
            for node, n in ledger.free.of(resource).reserve(pod_gpus, pods).items():
                taken[node] = taken.get(node, 0) + n
        ledger.allocated[job.queue] = ledger.allocated.get(job.queue, 0.0) + job.gpus
        since = last_actions.get(job.key)
        ago = f"suspended {format_duration(now - since)} ago; " if since is not None else ""
        on = ", ".join(f"{n}:{g}" for n, g in sorted(taken.items()))
        detail = f"{ago}fits free slots ({on}); no starved queue waits for them"
        actions.append(
            Action(
                kind=ActionKind.RESUME,
                target=job.key,
                reason=Reason.QUEUE_HAS_ROOM,
                evidence=Evidence(for_queue=job.queue, detail=detail),
                job_kind=job.kind,
            )
        )
    return actions, skips


def any_resumable(
    jobs: Sequence[Job],
    free: FreePool,
    released: Releasing,
    policy: Policy,
    *,
    now: float,
    last_actions: Mapping[str, float],
) -> bool:
    """Whether some job the reclaimer holds, not still releasing and out of its cool-down,
    fits `free` whole: what `_hold` asks of a job before any other rule, on the cycle's
    starting slots (`planner.may_resume`)."""
    for job in jobs:
        if not (job.suspended and job.suspended_by_reclaimer) or released.by_job.get(job.key):
            continue
        last = last_actions.get(job.key)
        if last is not None and now - last < policy.job_cooldown_seconds:
            continue
        shapes = _shapes(job).items()
        if all(free.of(r).fit_count(pod_gpus) >= pods for r, (pod_gpus, pods) in shapes):
            return True
    return False


def _contention_hold(job: Job, ledger: Ledger, contended: frozenset[str]) -> Skip | None:
    """A job stopped for contention relief whose room is only on nodes where a guaranteed job
    is busy stays stopped: resumed there, it would be stopped again (a flap per cool-down)."""
    if job.stop_reason != Reason.CONTENTION_RELIEF or not contended:
        return None
    elsewhere = dict.fromkeys(contended, -(10**9))  # those nodes' free slots left out
    for resource, (pod_gpus, pods) in _shapes(job).items():
        if ledger.free.of(resource).fit_count(pod_gpus, elsewhere) < pods:
            on = ", ".join(sorted(contended))
            why = f"stopped for contention relief; room only beside busy guaranteed jobs ({on})"
            return Skip(job.key, Reason.CONTENTION_WOULD_RETURN, why)
    return None


def _shapes(job: Job) -> dict[str, tuple[int, int]]:
    """(slots per pod, pods) per device resource the job's pods ask for."""
    pods = len(job.pods) or job.min_member
    return {r: pod_shape(n, pods) for r, n in slots_by_resource(job.gpus, job.mig).items()}


def _still_waiting(ledger: Ledger, nodes: Sequence[Node]) -> list[str]:
    """Unserved starved pending jobs that would fit the cluster if it were empty."""
    offered: dict[str, dict[str, int]] = {}
    for n in nodes:
        for resource, slots in node_capacity(n).items():
            offered.setdefault(resource, {})[n.name] = slots
    capacity = FreePool(offered)
    out = []
    for d in ledger.unserved:
        pod_gpus, pods = pod_shape(d.gpus, d.min_member)
        if capacity.of(resource_key(d.gpus, d.mig)).fit_count(pod_gpus) >= pods:
            out.append(d.job)
    return out


def _hold(
    job: Job,
    ledger: Ledger,
    policy: Policy,
    *,
    now: float,
    last_action: float | None,
    waiting: list[str],
) -> Skip | None:
    """Why `job` stays suspended this cycle, or None to resume it."""
    held = ledger.releasing.by_job.get(job.key)
    if held:
        why = f"still stopping: its pods hold {sum(held.values())} slots until they are gone"
        return Skip(job.key, Reason.ROOM_IN_FLIGHT, why)
    if last_action is not None and now - last_action < policy.job_cooldown_seconds:
        ago = format_duration(max(now - last_action, 0.0))
        return Skip(job.key, Reason.COOLING_DOWN, f"suspended {ago} ago")
    if waiting:
        first = waiting[0]
        return Skip(job.key, Reason.DEMAND_WAITING, f"{len(waiting)} waiting, first {first}")
    capped = ledger.over_capability(job.key, job.queue, job.gpus)
    if capped is not None:
        return capped
    for resource, (pod_gpus, pods) in _shapes(job).items():
        if not ledger.fits(resource, pod_gpus, pods):
            why = f"{pods}x{amount(pod_gpus, resource)} do not fit free slots"
            return Skip(job.key, Reason.NO_FIT, why)
    if job.gpus <= 0:
        return Skip(job.key, Reason.NO_FIT, "holds no GPU slots")
    return None
