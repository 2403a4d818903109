"""The pods' busy and co-busy time in a replay, as the controller reads it from Prometheus.

The controller reads, once an hour, each pod's present, busy (utilization above 0) and co-busy
(busy while another pod on its GPU is busy) time over the last day (`model.Contention`,
`plan.contend`). The replay builds the same answer at the first control cycle of each hour,
for every running job, and keeps it for the hour:

- present and busy: over the job's current run, the last `CONTENTION_WINDOW` seconds of its
  progress (at most a day of its profile: a pod slowed by sharing covers less in a day),
  present being that span and busy its samples with demand (`Usage.nonzero_seconds`);
- co-busy: the time-slicing pricer's co-busy fractions (`sim_sharing.cobusy.CobusyLog`, the
  same measure `ls_cobusy_share` reports) accumulated over the job's runs, less what it had
  accumulated at its last hourly read a day or more ago (none: all it has accumulated), at most
  its busy time.

A run that ends (finished, preempted, OOM-killed) leaves its reading, dated at its end, for a
day, as Prometheus keeps its samples. Approximations: a pod with a run that ended and one
running shows the running one's; a run that began within the day counts only since it began,
as its series does; busy and co-busy are counted in profile time, not scrape samples.

Side by side with the replay before this reading (docs/backtest.md, "Measured with every model
in force"): with `maxCobusyShare: 1` the replay's events are unchanged (digests `5d9755f0...` at
8 GiB and 38 GPUs, `9d6aa85f...` at 16 GiB and 28); with the default 0.05, `forecast` needs 58
GPUs where it needed 48 at 8 and 12 GiB, and no LS pod shares its GPU's time.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from types import MappingProxyType

from reclaimer.model import CONTENTION_WINDOW, Contention, PodBusy
from reclaimer.prometheus.sharing import LOAD_STEP

DAY_HOURS = int(CONTENTION_WINDOW // LOAD_STEP)
BusyOf = Callable[[int, float, float], float]  # `Usage.nonzero_seconds`: job, progress from, to
CobusyOf = Callable[[int, float], float]  # `CobusyLog.so_far`: job, progress now


@dataclass(frozen=True)
class RunningBusy:
    """A running job's current run, for its busy time so far."""

    key: str
    job: int
    base: float  # progress at the run's start
    progress: float  # progress now


class ContentionLog:
    """The hourly contention reading (mutable; one per replay)."""

    def __init__(self) -> None:
        self._hour: int | None = None
        self._answer = Contention(CONTENTION_WINDOW)
        self._marks: dict[int, list[tuple[int, float]]] = {}  # job: (hour, co-busy so far)
        self._ended: dict[str, tuple[float, PodBusy]] = {}  # pod: (its last run's end, reading)

    def ended(self, run: RunningBusy, at: float, busy_of: BusyOf, cobusy_of: CobusyOf) -> None:
        """A run of the pod ended at `at`: its reading stays in the answer for a day."""
        hour = math.floor(at / LOAD_STEP)
        so_far = cobusy_of(run.job, run.progress)
        self._ended[run.key] = (at, self._row(run, hour, busy_of, so_far))

    def read(
        self, now: float, running: Iterable[RunningBusy], busy_of: BusyOf, cobusy_of: CobusyOf
    ) -> Contention:
        """The hour's answer (module doc)."""
        hour = math.floor(now / LOAD_STEP)
        if hour == self._hour:
            return self._answer
        since = now - CONTENTION_WINDOW
        for key in [k for k, (at, _) in self._ended.items() if at < since]:
            del self._ended[key]
        pods = {key: row for key, (_, row) in self._ended.items()}
        marks: dict[int, list[tuple[int, float]]] = {}
        for run in running:
            so_far = cobusy_of(run.job, run.progress)
            pods[run.key] = self._row(run, hour, busy_of, so_far)
            marks[run.job] = [*self._recent(run.job, hour), (hour, so_far)]
        self._marks = marks
        self._hour = hour
        self._answer = Contention(CONTENTION_WINDOW, MappingProxyType(pods))
        return self._answer

    def _row(self, run: RunningBusy, hour: int, busy_of: BusyOf, so_far: float) -> PodBusy:
        """`run`'s reading at `hour`, `so_far` being its co-busy seconds over the replay."""
        start = max(run.base, run.progress - CONTENTION_WINDOW)
        busy = busy_of(run.job, start, run.progress)
        old = [m for m in self._marks.get(run.job, []) if m[0] <= hour - DAY_HOURS]
        then = old[-1][1] if old else 0.0  # younger than a day: all it has shared
        return PodBusy(run.progress - start, busy, min(max(so_far - then, 0.0), busy))

    def _recent(self, job: int, hour: int) -> list[tuple[int, float]]:
        """The job's marks still needed: the last a day or more old, and those since."""
        mine = self._marks.get(job, [])
        old = [m for m in mine if m[0] <= hour - DAY_HOURS]
        return [*old[-1:], *(m for m in mine if m[0] > hour - DAY_HOURS)]
