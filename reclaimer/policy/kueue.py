"""The policy's `kueue` section: what of each Kueue ClusterQueue the reclaimer may stop.

A ClusterQueue's nominal quota is what Kueue promises it: "the quantity of this resource that is
available for Workloads admitted by this ClusterQueue" (kubernetes-sigs/kueue
apis/kueue/v1beta2/clusterqueue_types.go `ResourceQuota`). Above it a queue runs on quota its
cohort lends, which Kueue itself takes back from it when the lender needs it, if the lender's
`preemption.reclaimWithinCohort` allows (its default, `Never`, does not). So the default,
`borrowed`, stops only what runs on borrowed quota: a queue is never taken below its nominal
quota, which is exactly what Kueue guarantees it, and idle GPUs held on lent quota go back to the
queue that lent them even where Kueue's own reclaim is off. `all` lets every job of the queue go
(a best-effort queue), `none` none (a guaranteed one). Pure constants and a parser.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from enum import StrEnum
from types import MappingProxyType

from reclaimer.policy.fields import setting


class Reclaim(StrEnum):
    BORROWED = "borrowed"  # above its nominal quota only (the default)
    ALL = "all"  # any of its jobs
    NONE = "none"  # none: a guaranteed queue


def as_reclaim(value: object) -> Reclaim:
    if not isinstance(value, str) or value not in Reclaim._value2member_map_:
        known = ", ".join(m.value for m in Reclaim)
        raise ValueError(f"expected one of {known}, got {value!r}")
    return Reclaim(value)


@dataclass(frozen=True)
class Kueue:
    """What the reclaimer may stop in Kueue's ClusterQueues: `reclaim` for every one, and
    `clusterQueues` by name for those that differ."""

    reclaim: Reclaim = setting(Reclaim.BORROWED, as_reclaim, "reclaim")  # noqa: RUF009 (an enum)
    cluster_queues: Mapping[str, Reclaim] = setting(
        MappingProxyType({}), None, "clusterQueues", values=as_reclaim
    )

    def of(self, name: str) -> Reclaim:
        return self.cluster_queues.get(name, self.reclaim)
