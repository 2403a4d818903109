"""Kueue ClusterQueues under the policy's `kueue` section (`reclaimer.policy.kueue`). Pure.

The snapshot reads a ClusterQueue with its nominal quota both deserved and guaranteed
(`kube.objects.kueue`); here each one's `Reclaim` setting decides what of that holds: `borrowed`
keeps the guarantee, so the victim search (`plan.search`) never takes the queue below its nominal
quota and stops only jobs on borrowed quota; `all` drops the guarantee; `none` makes the queue
not reclaimable. Volcano queues pass unchanged. Consumed by `plan.planner.plan` first thing.
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
