"""What a replay measures, and the JSON it reports.

GPU-hours are counted per run segment (from a job's start to its completion, preemption or the
end of the replay): allocated is GPUs x time, busy is GPUs x utilization x time (the job's
profile integrated over the segment's progress). A job's wait is the total time it spent pending,
over all its (re)queueings, censored at the end of the replay; percentiles are per queue, and
`guaranteed_wait_p95_s` pools every job of every guaranteed (non-reclaimable) queue.

A preemption is wrongful when the victim would have reached the idle threshold again within the
forecast horizon after the preemption point (read from its own profile); it is guaranteed when
the victim's queue is not reclaimable (every policy must keep that at zero). Lost GPU-hours are
the GPUs x seconds of work (time at or above the idle threshold) since the victim's last
checkpoint (or start): what it must do again (an OOM kill's lost work is counted there too, and
all the work a failed job kept).

Time-slicing (`sim_pool.timeslice`): a finished job's slowdown is its time running over its trace
run time (1 when it never shared a GPU, lost no work and was never stopped); `slowdown_p95` pools
every queue's finished jobs, `guaranteed_slowdown_p95` the guaranteed queues'. `oom_kills` counts
jobs killed for GPU memory on a time-sliced GPU, `guaranteed_oom_kills` those of guaranteed
queues. `busy_share_physical` is the busy GPU-hours over the physical GPU-hours of the replay
(`gpu_hours_capacity`), `timesliced_gpus` how many GPUs the pool holds. `own_utilization_jobs`
counts the jobs that replayed their own measured utilization (an `export-history` trace) rather
than a drawn profile. `memory_replay` says which memory rule held
(`sim_sharing.memory.MemoryReplay`): `none` (no memory file), `scaled` or `as measured`.
`ls_cobusy_share` is the share of the busy time (demand above 0) of the `ls` queue's pods, when that
queue is guaranteed, in which a neighbour on their time-sliced GPU was busy too
(`sim_sharing.cobusy`); 0 when they were never busy (or there is no such queue).
`failed_jobs` counts the jobs whose OOM-killed container restarted in its
pod until the Job's `backoffLimit` failed them (`sim_pool.crashes`): they never finish, and their
wait is counted as it stood; `guaranteed_failed_jobs` those of guaranteed queues.
`tuned_replicas` says what `timeslice-tuned` chose per GPU model of its pool and from what
(`sim_pool.tuned`: the p99 pod peak, the device's GiB, the replicas); {} for the other strategies.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

JSON_KEYS = (
    "strategy",
    "gpu_hours_capacity",
    "gpu_hours_allocated",
    "gpu_hours_busy",
    "effective_utilization",
    "allocation_rate",
    "wait_p50_s",
    "wait_p95_s",
    "guaranteed_wait_p95_s",
    "worst_guaranteed_queue",
    "preemptions",
    "wrongful_preemptions",
    "guaranteed_preemptions",
    "lost_gpu_hours",
    "own_utilization_jobs",
    "slowdown_p95",
    "guaranteed_slowdown_p95",
    "oom_kills",
    "guaranteed_oom_kills",
    "busy_share_physical",
    "timesliced_gpus",
    "wall_seconds",
    "memory_replay",
    "ls_cobusy_share",
    "failed_jobs",
    "guaranteed_failed_jobs",
    "tuned_replicas",
    "warnings",
    "warnings_cancelled_busy",
)


@dataclass(frozen=True)
class SharingTally:
    """What time-slicing did in a replay (`Replay.sharing_tally`)."""

    slowdowns: dict[str, list[float]] = field(default_factory=dict)  # per queue, finished jobs
    oom_kills: int = 0
    guaranteed_oom_kills: int = 0
    timesliced_gpus: int = 0
    ls_busy_seconds: float = 0.0  # busy (demand above 0) seconds of the guaranteed `ls` pods
    ls_cobusy_seconds: float = 0.0  # of which a neighbour on their time-sliced GPU was busy too
    failed_jobs: int = 0
    guaranteed_failed_jobs: int = 0


@dataclass
class Tally:
    """Running totals while a replay goes on (seconds; converted to hours at the end)."""

    allocated_gpu_s: float = 0.0
    busy_gpu_s: float = 0.0
    lost_gpu_s: float = 0.0
    preemptions: int = 0
    wrongful: int = 0
    guaranteed: int = 0
    warnings: int = 0  # stops scheduled with a warning first (`reclaimer.plan.warning`)
    warnings_cancelled_busy: int = 0  # of which withdrawn: the job turned busy in its warning
    waits: dict[str, list[float]] = field(default_factory=dict)

    def segment(self, gpus: float, seconds: float, busy_seconds: float) -> None:
        self.allocated_gpu_s += gpus * seconds
        self.busy_gpu_s += gpus * busy_seconds

    def preempted(self, gpus: float, lost_seconds: float, wrongful: bool, guaranteed: bool) -> None:
        self.preemptions += 1
        self.lost_gpu_s += gpus * lost_seconds
        self.wrongful += int(wrongful)
        self.guaranteed += int(guaranteed)

    def waited(self, queue: str, seconds: float) -> None:
        self.waits.setdefault(queue, []).append(seconds)


@dataclass(frozen=True)
class SimResult:
    strategy: str
    gpu_hours_capacity: float
    gpu_hours_allocated: float
    gpu_hours_busy: float
    effective_utilization: float
    allocation_rate: float
    wait_p50_s: dict[str, float]
    wait_p95_s: dict[str, float]
    guaranteed_wait_p95_s: float  # every job of every guaranteed queue, pooled
    worst_guaranteed_queue: dict[str, object]  # the guaranteed queue of highest own wait p95
    preemptions: int
    wrongful_preemptions: int
    guaranteed_preemptions: int
    lost_gpu_hours: float
    own_utilization_jobs: int = 0  # jobs that replayed their own measured utilization
    slowdown_p95: float = 1.0
    guaranteed_slowdown_p95: float = 1.0
    oom_kills: int = 0
    guaranteed_oom_kills: int = 0
    busy_share_physical: float = 0.0
    timesliced_gpus: int = 0
    wall_seconds: float = 0.0
    memory_replay: str = "none"  # the memory rule followed: none, scaled, as measured
    ls_cobusy_share: float = 0.0  # of the guaranteed `ls` pods' busy time (`sim_sharing.cobusy`)
    failed_jobs: int = 0  # failed by their Job's backoffLimit, every queue
    guaranteed_failed_jobs: int = 0
    # `timeslice-tuned` (`sim_pool.tuned`): per GPU model of its pool, its p99 peak, GiB, replicas
    tuned_replicas: dict[str, dict[str, float]] = field(default_factory=dict)
    # warnings before a stop (the policy's `warning:`): scheduled, and withdrawn because the job
    # turned busy within its warning (a stop the warning saved)
    warnings: int = 0
    warnings_cancelled_busy: int = 0

    def to_json(self) -> dict[str, object]:
        return {key: getattr(self, key) for key in JSON_KEYS}


def _percentiles(waits: dict[str, list[float]], q: float) -> dict[str, float]:
    return {
        queue: round(float(np.percentile(values, q)), 1)
        for queue, values in sorted(waits.items())
        if values
    }


def _pooled_p95(waits: dict[str, list[float]], queues: frozenset[str]) -> float:
    pooled = [w for queue in sorted(queues & waits.keys()) for w in waits[queue]]
    return round(float(np.percentile(pooled, 95)), 1) if pooled else 0.0


def _worst_queue(waits: dict[str, list[float]], queues: frozenset[str]) -> dict[str, object]:
    """The guaranteed queue whose own wait p95 is highest (the pooled p95 can hide a small
    queue's): {"queue", "wait_p95_s"}; an empty queue name when no guaranteed job waited."""
    own = _percentiles({q: w for q, w in waits.items() if q in queues}, 95)
    if not own:
        return {"queue": "", "wait_p95_s": 0.0}
    queue = max(sorted(own), key=lambda q: own[q])
    return {"queue": queue, "wait_p95_s": own[queue]}


def _slowdown_p95(slowdowns: dict[str, list[float]], queues: frozenset[str] | None) -> float:
    pooled = [x for q, xs in sorted(slowdowns.items()) if queues is None or q in queues for x in xs]
    return round(float(np.percentile(pooled, 95)), 4) if pooled else 1.0


def result_of(
    strategy: str,
    tally: Tally,
    capacity_gpus: float,
    span_seconds: float,
    guaranteed: frozenset[str],
    *,
    own_utilization_jobs: int = 0,
    sharing: SharingTally | None = None,
    memory_replay: str = "none",
    tuned: dict[str, dict[str, float]] | None = None,
) -> SimResult:
    shared = sharing or SharingTally()
    capacity = capacity_gpus * span_seconds / 3600.0
    allocated = tally.allocated_gpu_s / 3600.0
    busy = tally.busy_gpu_s / 3600.0
    return SimResult(
        strategy=strategy,
        gpu_hours_capacity=round(capacity, 2),
        gpu_hours_allocated=round(allocated, 2),
        gpu_hours_busy=round(busy, 2),
        effective_utilization=round(busy / allocated, 4) if allocated else 0.0,
        allocation_rate=round(allocated / capacity, 4) if capacity else 0.0,
        wait_p50_s=_percentiles(tally.waits, 50),
        wait_p95_s=_percentiles(tally.waits, 95),
        guaranteed_wait_p95_s=_pooled_p95(tally.waits, guaranteed),
        worst_guaranteed_queue=_worst_queue(tally.waits, guaranteed),
        preemptions=tally.preemptions,
        wrongful_preemptions=tally.wrongful,
        guaranteed_preemptions=tally.guaranteed,
        lost_gpu_hours=round(tally.lost_gpu_s / 3600.0, 2),
        own_utilization_jobs=own_utilization_jobs,
        slowdown_p95=_slowdown_p95(shared.slowdowns, None),
        guaranteed_slowdown_p95=_slowdown_p95(shared.slowdowns, guaranteed),
        oom_kills=shared.oom_kills,
        guaranteed_oom_kills=shared.guaranteed_oom_kills,
        busy_share_physical=round(busy / capacity, 4) if capacity else 0.0,
        timesliced_gpus=shared.timesliced_gpus,
        memory_replay=memory_replay,
        ls_cobusy_share=(
            round(shared.ls_cobusy_seconds / shared.ls_busy_seconds, 4)
            if shared.ls_busy_seconds
            else 0.0
        ),
        failed_jobs=shared.failed_jobs,
        guaranteed_failed_jobs=shared.guaranteed_failed_jobs,
        tuned_replicas=tuned or {},
        warnings=tally.warnings,
        warnings_cancelled_busy=tally.warnings_cancelled_busy,
    )
