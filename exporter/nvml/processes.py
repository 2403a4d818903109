"""Which processes run on a device, with their memory and their SM activity over the interval.

Running processes: `nvmlDeviceGetComputeRunningProcesses` (pynvml's `_v3`) and, for MPS clients,
`nvmlDeviceGetMPSComputeRunningProcesses` (under MPS the compute list holds the MPS server, and
the clients, which belong to the pods, are listed there). A driver before R510 lacks `_v3`
(pynvml raises NVMLLibraryMismatchError, classified as FunctionNotFound): the `_v2` call is used
from then on. A driver before R470 has no MPS call at all: no MPS clients to list.

Activity (whole GPUs only; NVML has no per-process utilization under MIG): one
`nvmlDeviceGetProcessUtilization` per GPU since its `lastSeenTimeStamp`, its rows filtered, read
(one averaged row per process, or one row per busy sample period) and the next timestamp chosen by
`exporter.nvml.process_activity`; per GPU UUID, since a GPU keeps its UUID across a
re-initialization that may renumber it. What a GPU's answers have shown of its sample period is
kept with its `lastSeenTimeStamp`.

Unknown is not idle. `running` returns None when the process list cannot be had (an error, or a
device that does not support the query): every pod on the device then has unknown usage. A
process gets NaN activity when the utilization query fails or is not supported, or when its only
rows were junk; 0 only when NVML says it was idle.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping
from typing import Any

from exporter.model import ProcessUsage
from exporter.nvml.calls import NVML_ERROR_NOT_FOUND, NVML_SUCCESS, CallOutcome, DeviceCalls
from exporter.nvml.process_activity import (
    Average,
    Row,
    accept,
    averages,
    next_last_seen,
    sample_period,
)
from exporter.nvml.readings import NvmlCollector

NAN = float("nan")
UNKNOWN = Average(NAN, NAN)
IDLE = Average(0.0, 0.0)
COMPUTE = "nvmlDeviceGetComputeRunningProcesses"
MPS = "nvmlDeviceGetMPSComputeRunningProcesses"
UTILIZATION = "nvmlDeviceGetProcessUtilization"
NO_ROWS = (NVML_ERROR_NOT_FOUND, NVML_SUCCESS)


def _listing(calls: DeviceCalls, name: str, handle: Any) -> CallOutcome:
    """The v3 listing, or v2 once v3 turned out missing on this device's driver."""
    got = calls.call(NvmlCollector.PROCESSES, name, handle)
    if got.disabled:
        got = calls.call(NvmlCollector.PROCESSES, name + "_v2", handle)
    return got


def running(calls: DeviceCalls, handle: Any) -> dict[int, int | None] | None:
    """{pid: memory bytes or None} of the compute and MPS processes; None when unknown."""
    compute = _listing(calls, COMPUTE, handle)
    if not compute.ok:
        return None
    mps = _listing(calls, MPS, handle)
    if not (mps.ok or mps.disabled):
        return None
    out: dict[int, int | None] = {}
    for info in [*compute.value, *(mps.value if mps.ok else ())]:
        memory = info.usedGpuMemory
        out[int(info.pid)] = None if memory is None else int(memory)
    return out


class ProcessReader:
    """Reads each GPU's processes and their activity, keeping each GPU's `lastSeenTimeStamp` and
    sample period between sweeps (as `GpmReader` keeps GPM samples and `XidReader` the event
    set)."""

    def __init__(self, clock: Callable[[], float]) -> None:
        self._clock = clock
        self.reset()

    def reset(self) -> None:
        """Forget every GPU: the next read of each asks from now on, and a driver loaded anew
        shows again how it answers."""
        self._epoch_us = int(self._clock() * 1e6)
        self._last_seen: dict[str, int] = {}
        self._period_us: dict[str, int] = {}  # GPUs whose answers showed per-period rows

    def gpu_processes(
        self, calls: DeviceCalls, uuid: str, handle: Any
    ) -> tuple[ProcessUsage, ...] | None:
        """The GPU's processes over the interval since the last read; None when unknown."""
        procs = running(calls, handle)
        if procs is None:
            return None
        known, default = self._activity(calls, uuid, handle, procs.keys())
        return tuple(
            ProcessUsage(pid, avg.sm, avg.mem, procs[pid])
            for pid in sorted(procs)
            for avg in (known.get(pid, default),)
        )

    def _activity(
        self, calls: DeviceCalls, uuid: str, handle: Any, pids: Collection[int]
    ) -> tuple[Mapping[int, Average], Average]:
        """Each process's activity, and the activity of a process without a row."""
        last = self._last_seen.get(uuid, self._epoch_us)
        now_us = int(self._clock() * 1e6)
        # pynvml's wrapper raises NVMLError(NVML_SUCCESS) when the sizing call succeeds (no rows
        # to size): like NotFound, nothing was busy.
        got = calls.call(NvmlCollector.PROCESSES, UTILIZATION, handle, last, idle_codes=NO_ROWS)
        if not (got.ok or got.idle):  # failed or not supported: nobody's activity is known
            return {}, UNKNOWN
        rows = [
            Row(int(s.pid), int(s.timeStamp), int(s.smUtil), int(s.memUtil))
            for s in (got.value if got.ok else ())
        ]
        accepted = accept(rows, pids, last, now_us)
        period = sample_period(accepted, self._period_us.get(uuid))
        if period is not None:
            self._period_us[uuid] = period
        self._last_seen[uuid] = next_last_seen(last, accepted.newest_us, now_us)
        by_pid = dict(averages(accepted, period, last, now_us))
        by_pid.update(dict.fromkeys(accepted.unknown, UNKNOWN))
        return by_pid, IDLE


def shared_activity(
    procs: dict[int, int | None], gr_active: float, dram_active: float
) -> tuple[ProcessUsage, ...]:
    """A MIG instance's processes: its GPM activity divided evenly (NaN until GPM has two
    samples); NVML has no per-process utilization on MIG."""
    share = 1.0 / len(procs) if procs else 0.0
    return tuple(
        ProcessUsage(pid, gr_active * share, dram_active * share, procs[pid])
        for pid in sorted(procs)
    )
