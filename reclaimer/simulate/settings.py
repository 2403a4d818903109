"""What a replay is asked to replay: its strategy, seed, cycle, time-sliced pool and queue shares.

`SimSettings` holds the replay's knobs (the CLI's flags); `default_shares` gives each guaranteed
queue its deserved share when the policy names none. Its defaults replay no cold starts (the CLI
draws them from GenTD26 unless told `--no-cold-start`) and the Job default `backoffLimit` of 6
(`sim_sharing.restarts`). Pure.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType

from reclaimer.simulate.sharing.contention import (
    DEFAULT_ANONYMIZED_GIB,
    DEFAULT_SWITCH_OVERHEAD,
    Contention,
)
from reclaimer.simulate.sharing.load import ProfileOffsets
from reclaimer.simulate.sharing.restarts import DEFAULT_BACKOFF_LIMIT, ColdStarts
from reclaimer.simulate.strategies import Strategy
from reclaimer.simulate.trace import Jobs

RECLAIMABLE = frozenset({"be"})


@dataclass(frozen=True)
class SimSettings:
    strategy: Strategy
    seed: int = 0
    interval_seconds: float = 300.0
    idle_window_seconds: float = 1800.0  # the culler's "idle for N minutes"
    checkpoint_seconds: float | None = None
    reclaimable: frozenset[str] = RECLAIMABLE
    queue_shares: Mapping[str, float] = field(default_factory=lambda: MappingProxyType({}))
    replicas: int = 2  # time-slice replicas per GPU on the pool (`timeslice`)
    forecast_start_whole: bool = True  # `forecast`'s pool starts at 1 replica (else `replicas`)
    pool_share: float = 0.0  # of the nodes of each GPU count (`sim_pool.members.pool_nodes`)
    switch_overhead: float = DEFAULT_SWITCH_OVERHEAD  # `fair` contention only
    contention: Contention = Contention.FAIR  # how a time-sliced GPU's time is divided
    share_step_seconds: float = 300.0  # how often time-sliced GPUs' shares are recomputed
    anonymized_gib: float = DEFAULT_ANONYMIZED_GIB  # memory of a GPU model the trace hides
    profile_offsets: ProfileOffsets = ProfileOffsets.ARRIVAL  # where drawn profiles start
    cold_starts: ColdStarts = field(default_factory=ColdStarts, repr=False)  # loads to draw
    backoff_limit: int = DEFAULT_BACKOFF_LIMIT  # a job fails at this many container restarts
    pool_seed: int = 0  # which draw of the nodes forms the pool (`sim_pool.members.pool_nodes`)
    share_memory_cap: bool = (
        True  # a sharing pod holds at most its share (`sim_sharing.share_memory`)
    )


def default_shares(jobs: Jobs, reclaimable: frozenset[str]) -> dict[str, float]:
    """Guaranteed queues share the cluster in proportion to their GPU-seconds in the trace."""
    demand: dict[str, float] = {}
    for queue, gpus, runtime in zip(jobs.queues, jobs.gpus, jobs.runtime, strict=True):
        if queue not in reclaimable:
            demand[queue] = demand.get(queue, 0.0) + float(gpus * runtime)
    total = sum(demand.values()) or 1.0
    return {q: d / total for q, d in sorted(demand.items())}
