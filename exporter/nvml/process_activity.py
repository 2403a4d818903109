"""Which rows of an `nvmlDeviceGetProcessUtilization` answer to believe, what they say about each
process's activity over the interval, and where to ask from next.

What NVML returns is read two ways from nvml.h (NVIDIA/go-nvml gen/nvml/nvml.h; answers printed
in go-nvml#51 and nvtop#110), and the exporter reads either:
- AVERAGED: one row per process that was busy since the `lastSeenTimeStamp` passed in, its
  `smUtil` / `memUtil` that process's average since then, in percent ("read utilization since
  the previous query"), its `timeStamp` when the driver last sampled that process.
- PER_PERIOD: one row per process per sample period newer than `lastSeenTimeStamp` in which it
  was busy ("Return only samples with timestamp greater than lastSeenTimeStamp"), each that
  period's values; idle periods have no row. pynvml returns every row the driver wrote
  (nvidia-ml-py pynvml.py), and DCGM keeps each as one sample of its PID and averages a PID's
  samples (NVIDIA/DCGM dcgmlib/src/DcgmCacheManager.cpp, GetUniquePidUtilLists).
A process has at most one row per answer under AVERAGED, so two rows of one process at least a
sample period apart (nvml.h, nvmlUtilization_t: a period is 1/6 s to 1 s) show PER_PERIOD, and
the smallest such gap is the GPU's sample period (`sample_period`). Until a GPU's answers have
shown that, a lone row is read as AVERAGED; after, a process's rows are summed over the number of
its sample periods in the interval, counted on its own sampling phase (`averages`). Either way a
row set becomes the process's time average over the interval, idle periods counting 0. (A third
reading, one row per process holding only the last period whatever the window, would make any
interval longer than a period unmeasurable; `make gpu-check` tells the three apart on a GPU.)

Rows are not all to be believed (as nvtop filters them, nvtop#110): a row for a PID that is not
running (an exited or zombie process, or PID 0 padding) is dropped; a row with a percentage above
100 or a timestamp in the future is junk; a row not newer than `lastSeenTimeStamp` is stale. A
running process whose only rows were junk is unknown this cycle, not idle.

The next `lastSeenTimeStamp` is the time of this read, taken just before the call (nvml.h: "the
CPU timestamp in microseconds at which utilization samples were last read"), or the newest
accepted row's timestamp if that is later; never an unaccepted row's, so one junk timestamp in
the future cannot make every later answer NotFound (every process "idle" for good). Reading from
the previous read, not from the newest row, keeps each process's average to the interval even
though the processes' timestamps are staggered, and keeps a burst after a long idle spell from
being averaged over all the idle time since the last busy row. Pure functions, used by
`exporter.nvml.processes`.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping
from dataclasses import dataclass
from itertools import pairwise
from types import MappingProxyType

FUTURE_SLACK_US = 1_000_000  # the driver and the exporter read the same host clock
# nvml.h, nvmlUtilization_t: "Each sample period may be between 1 second and 1/6 second": two
# rows of one process closer than that are not two periods (a duplicate, or junk).
MIN_PERIOD_US = 1_000_000 // 6


@dataclass(frozen=True)
class Row:
    pid: int
    time_stamp_us: int
    sm_util: int  # percent: the process's average since lastSeenTimeStamp, or one period's
    mem_util: int


@dataclass(frozen=True)
class Average:
    sm: float  # ratio 0..1 over the interval
    mem: float


@dataclass(frozen=True)
class Accepted:
    rows: Mapping[int, tuple[Row, ...]]  # running processes' believable rows, oldest first
    unknown: frozenset[int]  # running processes whose only rows were junk
    newest_us: int | None  # the newest accepted timestamp
    junk: int  # rows dropped as impossible


def accept(
    rows: Iterable[Row], running: Collection[int], last_seen_us: int, now_us: int
) -> Accepted:
    """Pure: the rows to believe, per running PID, oldest first, one per timestamp."""
    kept: dict[int, dict[int, Row]] = {}
    junk_pids: set[int] = set()
    junk = 0
    for row in rows:
        if row.pid not in running:
            continue  # exited, zombie or padding
        if row.sm_util > 100 or row.mem_util > 100 or row.time_stamp_us > now_us + FUTURE_SLACK_US:
            junk += 1
            junk_pids.add(row.pid)
            continue
        if row.time_stamp_us > last_seen_us:
            kept.setdefault(row.pid, {})[row.time_stamp_us] = row
    by_pid = {pid: tuple(got[ts] for ts in sorted(got)) for pid, got in kept.items()}
    return Accepted(
        rows=MappingProxyType(by_pid),
        unknown=frozenset(junk_pids - by_pid.keys()),
        newest_us=max((r[-1].time_stamp_us for r in by_pid.values()), default=None),
        junk=junk,
    )


def sample_period(accepted: Accepted, known_us: int | None) -> int | None:
    """Pure: the GPU's sample period as its answers have shown it: the smallest gap, of at least
    MIN_PERIOD_US, between two rows of one process, here or before (`known_us`); None while no
    answer has held two such rows (a driver answering AVERAGED never shows any)."""
    gaps = [
        b.time_stamp_us - a.time_stamp_us
        for rows in accepted.rows.values()
        for a, b in pairwise(rows)
        if b.time_stamp_us - a.time_stamp_us >= MIN_PERIOD_US
    ]
    return min([*gaps, *([known_us] if known_us is not None else [])], default=None)


def averages(
    accepted: Accepted, period_us: int | None, last_seen_us: int, read_at_us: int
) -> Mapping[int, Average]:
    """Pure: each running process's activity over (last_seen_us, read_at_us], from its rows.

    `period_us` None (AVERAGED): the row is the average (the newest, should rows closer than a
    period come). Else (PER_PERIOD): the rows' sum over the process's sample periods in the
    interval, at least one per row."""
    out = {}
    for pid, rows in accepted.rows.items():
        newest = rows[-1]
        if period_us is None:
            out[pid] = Average(newest.sm_util / 100.0, newest.mem_util / 100.0)
            continue
        end_us = max(read_at_us, newest.time_stamp_us)
        periods = max(len(rows), periods_in(newest.time_stamp_us, period_us, last_seen_us, end_us))
        out[pid] = Average(
            sum(r.sm_util for r in rows) / (100.0 * periods),
            sum(r.mem_util for r in rows) / (100.0 * periods),
        )
    return MappingProxyType(out)


def periods_in(stamp_us: int, period_us: int, start_us: int, end_us: int) -> int:
    """Pure: how many of the times `stamp_us + k * period_us` (k any integer) fall in
    (start_us, end_us]: the sample periods of a process sampled at `stamp_us` in that interval.
    Requires start_us < stamp_us <= end_us."""
    before = (stamp_us - start_us - 1) // period_us  # in (start_us, stamp_us)
    after = (end_us - stamp_us) // period_us  # in (stamp_us, end_us]
    return before + 1 + after


def next_last_seen(last_seen_us: int, newest_us: int | None, read_at_us: int) -> int:
    """Pure: the `lastSeenTimeStamp` for the next read, after a read made at `read_at_us`."""
    return max(last_seen_us, read_at_us, newest_us if newest_us is not None else last_seen_us)
