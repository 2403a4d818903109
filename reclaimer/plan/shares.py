"""What each queue deserves: explicit, from the policy, or Volcano's proportion by weight.

Theory of operation. A queue's deserved slots come, in order, from its `Queue.deserved_gpus`
(Volcano's capacity plugin), from the policy's `queueShares` fraction of the cluster, or from its
weight. Weight shares follow Volcano's `proportion` plugin rather than a fixed fraction: the
slots left after the fixed shares are dealt out by weight, but no queue is dealt more than it
requests (its allocation plus its pending demand), and what a queue cannot use is dealt again to
the others by weight, until the slots or the requests run out. So an idle tenant's share goes to
the tenants that wait, which is what lets a busy queue reclaim from the best-effort queue while
the others need nothing, and a queue that asks for nothing deserves nothing.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from reclaimer.model import Queue
from reclaimer.policy.settings import Policy

_EPSILON = 1e-9


def deserved_shares(
    queues: Iterable[Queue],
    total_slots: float,
    policy: Policy,
    requests: Mapping[str, float],
) -> dict[str, float]:
    """Queue name -> deserved slots (explicit, else policy share, else proportion by weight)."""
    out: dict[str, float] = {}
    weights: dict[str, float] = {}
    for q in queues:
        if q.deserved_gpus is not None:
            out[q.name] = q.deserved_gpus
        elif q.name in policy.queue_shares:
            out[q.name] = policy.queue_shares[q.name] * total_slots
        else:
            weights[q.name] = float(max(q.weight, 0))
    left = max(0.0, total_slots - sum(out.values()))
    out.update(proportion(weights, requests, left))
    return out


def proportion(
    weights: Mapping[str, float], requests: Mapping[str, float], total: float
) -> dict[str, float]:
    """Share `total` by weight, never beyond a queue's request; the surplus is dealt again."""
    deserved = dict.fromkeys(weights, 0.0)
    open_ = sorted(q for q, w in weights.items() if w > 0 and requests.get(q, 0.0) > 0)
    left = total
    while open_ and left > _EPSILON:
        weight_sum = sum(weights[q] for q in open_)
        dealt = 0.0
        for q in open_:
            grant = min(left * weights[q] / weight_sum, requests[q] - deserved[q])
            deserved[q] += grant
            dealt += grant
        left -= dealt
        open_ = [q for q in open_ if deserved[q] < requests[q] - _EPSILON]
    return deserved
