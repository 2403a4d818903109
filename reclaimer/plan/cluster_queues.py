"""Kueue ClusterQueues under the policy's `kueue` section (`reclaimer.policy.kueue`). Pure.

The snapshot reads a ClusterQueue with its nominal quota both deserved and guaranteed
(`kube.objects.kueue`); here each one's `Reclaim` setting decides what of that holds: `borrowed`
keeps the guarantee, so the victim search (`plan.search`) never takes the queue below its nominal
quota and stops only jobs on borrowed quota; `all` drops the guarantee; `none` makes the queue
not reclaimable. Volcano queues pass unchanged. Consumed by `plan.planner.plan` first thing.

Each pending job is judged by the system that admits it (`frees_room_for`, consumed by the victim
search, `plan.search`): a Workload waiting in a ClusterQueue is admitted once quota frees in its
cohort, so only jobs Kueue admitted in a ClusterQueue of the same cohort make room for it
(stopping a Volcano job frees devices, not Kueue quota); a job waiting in a Volcano queue is not
served by stopping a Kueue job, whose freed quota Kueue would hand to its own next Workload at
once, racing it for the devices.
"""

from __future__ import annotations

from dataclasses import replace

from reclaimer.model import Queue, Snapshot
from reclaimer.policy.kueue import Kueue, Reclaim


def under_policy(queue: Queue, kueue: Kueue) -> Queue:
    if not queue.cluster_queue:
        return queue
    mode = kueue.of(queue.name)
    if mode is Reclaim.NONE:
        return replace(queue, reclaimable=False)
    if mode is Reclaim.ALL:
        return replace(queue, reclaimable=True, guarantee_gpus=0.0)
    return replace(queue, reclaimable=True, guarantee_gpus=queue.deserved_gpus or 0.0)


def with_policy(snapshot: Snapshot, kueue: Kueue) -> Snapshot:
    """`snapshot` with its ClusterQueues under `kueue`; the same object when it has none."""
    if not any(q.cluster_queue for q in snapshot.queues):
        return snapshot
    return replace(snapshot, queues=tuple(under_policy(q, kueue) for q in snapshot.queues))


def frees_room_for(pending: Queue | None, victim: Queue | None) -> bool:
    """Whether stopping a job of queue `victim` can make room for one waiting in `pending`."""
    kueue_pending = pending is not None and pending.cluster_queue
    kueue_victim = victim is not None and victim.cluster_queue
    if kueue_pending != kueue_victim:
        return False
    if not kueue_pending:
        return True
    assert pending is not None and victim is not None
    return bool(pending.cohort) and pending.cohort == victim.cohort
