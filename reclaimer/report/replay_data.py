"""What the backtest report draws: one replay's timeline and a capacity sweep's verdicts.

Plain frozen data, filled by the replay (`reclaimer.simulate.timeline`, `reclaimer.simulate.sweep`)
and read by the report (`reclaimer.report.html_report`), so that the report never imports the
simulator. Times are seconds; a timeline's series hold one value per bin of `bin_seconds`
starting at `begin`. A sweep's verdicts are made under one `Rule`; under the pooled rule the
per-queue rule's verdicts travel beside them (`SweepSummary.per_queue`), since a pooled p95 can
pass while a small guaranteed queue starves.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import StrEnum


class Rule(StrEnum):
    """Which wait p95 a capacity sweep holds to its SLO."""

    PER_QUEUE = "per-queue"  # every guaranteed queue's own p95 (the default)
    POOLED = "pooled"  # one p95 over every guaranteed queue's jobs together


@dataclass(frozen=True)
class RunRecord:
    """One replay (a strategy at a capacity and seed), with what it did over time."""

    strategy: str
    gpus: int  # the cluster's capacity
    seed: int
    result: Mapping[str, object]  # `SimResult.to_json()`, with the run's wall time
    waits: Mapping[str, tuple[float, ...]]  # every job's total wait, per queue
    begin: float
    bin_seconds: float
    allocated_gpus: tuple[float, ...]  # mean GPUs held by running jobs in each bin
    busy_gpus: tuple[float, ...]  # mean GPUs' worth of utilization in each bin
    preemptions: tuple[int, ...]  # preemptions in each bin
    wrongful: tuple[int, ...]  # of which wrongful (busy again within the horizon)
    oom_kills: tuple[int, ...] = ()  # OOM kills on time-sliced GPUs in each bin
    guaranteed_oom_kills: tuple[int, ...] = ()  # of which of guaranteed queues' jobs
    slowdowns: Mapping[str, tuple[float, ...]] = field(default_factory=dict)  # per queue


@dataclass(frozen=True)
class CapacityResult:
    """One strategy at one capacity: the pooled guaranteed wait p95 on each seed, and what
    time-slicing cost the guaranteed jobs there (slowdown p95, OOM kills, the LS pods' co-busy
    share, failed jobs) on each seed."""

    gpus: int
    capacity_scale: float
    p95_by_seed: Mapping[int, float]
    meets_slo: bool  # on every seed: wait, slowdown, OOM kills, LS co-busy share, failed jobs
    slowdown_by_seed: Mapping[int, float] = field(default_factory=dict)
    oom_by_seed: Mapping[int, int] = field(default_factory=dict)
    # the guaranteed queue of highest own wait p95, and whether every one keeps the SLO
    worst_queue_by_seed: Mapping[int, tuple[str, float]] = field(default_factory=dict)
    queues_meet_slo: bool = True
    ls_cobusy_by_seed: Mapping[int, float] = field(default_factory=dict)  # ls_cobusy_share
    failed_by_seed: Mapping[int, int] = field(default_factory=dict)  # guaranteed failed jobs

    @property
    def worst_p95(self) -> float:
        return max(self.p95_by_seed.values())

    def waits_by_seed(self, rule: Rule) -> Mapping[int, float]:
        """The wait p95 `rule` reads, on each seed: the pooled one, or the worst queue's own."""
        if rule is Rule.POOLED:
            return self.p95_by_seed
        return {seed: p95 for seed, (_, p95) in self.worst_queue_by_seed.items()}

    def worst_wait(self, rule: Rule) -> float:
        return max(self.waits_by_seed(rule).values(), default=0.0)

    def as_dict(self) -> dict[str, object]:
        return {
            "gpus": self.gpus,
            "capacity_scale": self.capacity_scale,
            "guaranteed_wait_p95_s": {str(s): v for s, v in sorted(self.p95_by_seed.items())},
            "worst_p95_s": self.worst_p95,
            "guaranteed_slowdown_p95": {
                str(s): v for s, v in sorted(self.slowdown_by_seed.items())
            },
            "guaranteed_oom_kills": {str(s): v for s, v in sorted(self.oom_by_seed.items())},
            "guaranteed_failed_jobs": {str(s): v for s, v in sorted(self.failed_by_seed.items())},
            "worst_guaranteed_queue": {
                str(s): {"queue": q, "wait_p95_s": v}
                for s, (q, v) in sorted(self.worst_queue_by_seed.items())
            },
            "meets_slo": self.meets_slo,
            "ls_cobusy_share": {str(s): v for s, v in sorted(self.ls_cobusy_by_seed.items())},
        }


@dataclass(frozen=True)
class PolicyVerdict:
    """The fewest GPUs at which a strategy keeps the SLO, or why there is no such number."""

    strategy: str
    min_gpus: int | None
    gpus_saved_vs_none: int | None
    reason: str | None  # why `min_gpus` or `gpus_saved_vs_none` is null
    caveats: tuple[str, ...]
    per_capacity: tuple[CapacityResult, ...]  # fewest GPUs first

    def headline(self) -> dict[str, object]:
        return {
            "min_gpus": self.min_gpus,
            "gpus_saved_vs_none": self.gpus_saved_vs_none,
            "reason": self.reason,
            "caveats": list(self.caveats),
        }

    def as_dict(self) -> dict[str, object]:
        return self.headline() | {"per_capacity": [c.as_dict() for c in self.per_capacity]}


@dataclass(frozen=True)
class SweepSummary:
    slo_seconds: float
    seeds: tuple[int, ...]
    range_note: str  # how the capacities were chosen
    verdicts: tuple[PolicyVerdict, ...]  # under `rule`
    rule: Rule = Rule.PER_QUEUE
    per_queue: tuple[PolicyVerdict, ...] = ()  # under the per-queue rule, beside a pooled one

    def beside(self, strategy: str) -> PolicyVerdict | None:
        """The per-queue rule's verdict on `strategy`, printed beside the pooled rule's."""
        return next((v for v in self.per_queue if v.strategy == strategy), None)
