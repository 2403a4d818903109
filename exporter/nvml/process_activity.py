"""Which rows of an `nvmlDeviceGetProcessUtilization` answer to believe, and where to ask from next.

What NVML returns (nvml.h; answers printed in go-nvml#51 and nvtop#110): one row per process
that was busy since the `lastSeenTimeStamp` passed in; `smUtil` / `memUtil` are that process's
average since then, in percent (the reading taken here of nvml.h's "had some non-zero utilization
during the last sample period" next to "read utilization since the previous query"; the other
reading, the last period's value whatever the window, would make a row a ~1 s snapshot, not the
interval's average; `make gpu-check` records which a real driver does, see
scripts/gpu_check_window.py); `timeStamp` is when the driver last sampled that process and
differs from process to process. A running process without a row was idle (0); NotFound means
every process was. So a row is the process's time average over the collect interval as it is, and
nothing is summed or scaled.

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
from types import MappingProxyType

FUTURE_SLACK_US = 1_000_000  # the driver and the exporter read the same host clock


@dataclass(frozen=True)
class Row:
    pid: int
    time_stamp_us: int
    sm_util: int  # percent, the process's average since lastSeenTimeStamp
    mem_util: int


@dataclass(frozen=True)
class Average:
    sm: float  # ratio 0..1 over the interval
    mem: float


@dataclass(frozen=True)
class Accepted:
    by_pid: Mapping[int, Average]  # running processes with a believable row
    unknown: frozenset[int]  # running processes whose only rows were junk
    newest_us: int | None  # the newest accepted timestamp
    junk: int  # rows dropped as impossible


def accept(
    rows: Iterable[Row], running: Collection[int], last_seen_us: int, now_us: int
) -> Accepted:
    """Pure: the rows to believe, per running PID (the newest row when a PID has several)."""
    best: dict[int, Row] = {}
    junk_pids: set[int] = set()
    junk = 0
    for row in rows:
        if row.pid not in running:
            continue  # exited, zombie or padding
        if row.sm_util > 100 or row.mem_util > 100 or row.time_stamp_us > now_us + FUTURE_SLACK_US:
            junk += 1
            junk_pids.add(row.pid)
            continue
        if row.time_stamp_us <= last_seen_us:
            continue
        held = best.get(row.pid)
        if held is None or row.time_stamp_us > held.time_stamp_us:
            best[row.pid] = row
    return Accepted(
        by_pid=MappingProxyType(
            {pid: Average(r.sm_util / 100.0, r.mem_util / 100.0) for pid, r in best.items()}
        ),
        unknown=frozenset(junk_pids - best.keys()),
        newest_us=max((r.time_stamp_us for r in best.values()), default=None),
        junk=junk,
    )


def next_last_seen(last_seen_us: int, newest_us: int | None, read_at_us: int) -> int:
    """Pure: the `lastSeenTimeStamp` for the next read, after a read made at `read_at_us`."""
    return max(last_seen_us, read_at_us, newest_us if newest_us is not None else last_seen_us)
