"""The pods' memory peaks in a replay, as the controller reads them from Prometheus.

The controller reads, once an hour, each pod's most device memory over the last `PEAK_DAYS`
(`prometheus.sharing.peaks_query`: `max_over_time` per pod, over its GPUs and its restarts), and
the raise gate budgets every pod slot from them (`plan.raises.slot_budget`), as does the cap on
the replicas a node keeps (`plan.budget`). In the replay every
job is a pod (`Replay.keys`) on every GPU node, pool or not, as the exporter runs on every GPU
node: a run that ends (finished, preempted, OOM-killed) leaves its peak over the run, dated at its
end (`ended`); a running job's peak is its current run's, read when the hour's answer is built.
`read` builds that answer at the first control cycle of each hour, at that cycle's time, and
keeps it for the hour, as the controller does.
What that query answers (Prometheus docs, Querying / Functions, `<aggregation>_over_time()`:
"max_over_time(range-vector): the maximum value of all points in the specified interval"; a
range `[7d]` selects the samples of the 7 days up to the evaluation time): a pod is in the
answer while any of its samples is. Approximations: a run's peak counts whole while its end is
in the window, and a run longer than the window is read over the window's length of progress
(its last `PEAK_DAYS` at rate 1).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from types import MappingProxyType

from reclaimer.model import MemoryPeaks
from reclaimer.prometheus.sharing import LOAD_STEP, PEAK_WINDOW
from reclaimer.simulate.sharing.memory import GIB

PeakOf = Callable[[int, float, float], float]  # `Usage.memory_peak`: job, progress from, to


@dataclass(frozen=True)
class RunningPeak:
    """A running job's current run, for its peak so far."""

    key: str
    job: int
    base: float  # progress at the run's start
    progress: float  # progress now


class PeakLog:
    """Pods' peaks over the window (mutable; one per replay)."""

    def __init__(self) -> None:
        self._ended: dict[str, tuple[float, float]] = {}  # pod -> (last run's end, GiB peak)
        self._hour: int | None = None
        self._answer = MemoryPeaks(PEAK_WINDOW)

    def ended(self, key: str, at: float, gib: float) -> None:
        """A run of pod `key` ended at `at`, having held at most `gib`."""
        before = self._ended.get(key)
        self._ended[key] = (at, max(gib, before[1] if before else 0.0))

    def read(self, now: float, running: Iterable[RunningPeak], peak_of: PeakOf) -> MemoryPeaks:
        """The hour's answer (module doc); `peak_of(job, from, to)` is `Usage.memory_peak`."""
        hour = math.floor(now / LOAD_STEP)
        if hour == self._hour:
            return self._answer
        since = now - PEAK_WINDOW
        for key in [k for k, (at, _) in self._ended.items() if at < since]:
            del self._ended[key]
        pods = {key: gib for key, (_, gib) in self._ended.items()}
        for run in running:
            gib = peak_of(run.job, max(run.base, run.progress - PEAK_WINDOW), run.progress)
            pods[run.key] = max(gib, pods.get(run.key, 0.0))
        self._hour = hour
        in_bytes = MappingProxyType({k: v * GIB for k, v in pods.items()})
        self._answer = MemoryPeaks(PEAK_WINDOW, in_bytes)
        return self._answer
