"""Turn NVML's per-process utilization samples into time averages over a collect interval.

The driver keeps, per device, one sample per process per sample period, and only for periods in
which the process was active; each sample's `smUtil` is the share of that period the process
kept the SMs busy. The average over an interval is therefore the sum of the samples' shares times
the period, divided by the interval: absent periods count as zero, and the result does not depend
on when inside the interval the exporter happened to look. The period itself is not reported; it
is estimated as the smallest gap between distinct sample timestamps seen so far (never smaller
than the true period, so the estimate only errs high until two adjacent periods are seen).
Pure functions, used by `exporter.nvml`.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable
from dataclasses import dataclass


@dataclass(frozen=True)
class Sample:
    pid: int
    time_stamp_us: int
    sm_util: int  # percent of the sample period
    mem_util: int


@dataclass(frozen=True)
class Average:
    sm: float  # ratio 0..1 over the interval
    mem: float


def estimate_period_us(stamps: Iterable[int], previous_us: int) -> int:
    """The smallest positive gap between distinct timestamps, or `previous_us` if larger."""
    distinct = sorted(set(stamps))
    gaps = [b - a for a, b in itertools.pairwise(distinct) if b > a]
    return min([previous_us, *gaps])


def average_by_pid(
    samples: Iterable[Sample], interval_s: float, period_s: float
) -> dict[int, Average]:
    """Each process's time-averaged SM and memory activity over an interval of `interval_s`.

    Pure. `period_s` is the driver's sample period. Values are clamped to 0..1 (a sample period
    straddling the interval's start can make a slightly longer effective window).
    """
    if interval_s <= 0:
        return {}
    sums: dict[int, list[float]] = {}
    for s in samples:
        acc = sums.setdefault(s.pid, [0.0, 0.0])
        acc[0] += s.sm_util / 100.0
        acc[1] += s.mem_util / 100.0
    scale = period_s / interval_s
    return {
        pid: Average(min(1.0, sm * scale), min(1.0, mem * scale)) for pid, (sm, mem) in sums.items()
    }
