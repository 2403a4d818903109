"""The driver's per-process utilization samples, and what `nvmlDeviceGetProcessUtilization` makes
of them. Built from NVIDIA's documentation and what real drivers were seen to return, not from how
the exporter reads them:

- The driver samples every process that holds a context once per sample period and keeps the
  samples in an internal buffer (nvml.h, nvmlDeviceGetProcessUtilization: "read utilization based
  on all the samples maintained by the driver's internal sample buffer").
- Each process is sampled on its own phase, so the timestamps of one answer differ from process to
  process (go-nvml#51 and nvtop#110 print answers whose rows carry different timeStamps). A
  sample is in the buffer from its timestamp on (nvml.h: the row "includes the CPU timestamp at
  which the samples were recorded"), so a query answers from the samples stamped up to its time.
- What an answer holds is read two ways, and the emulator answers either way (`ProcessRows`, per
  GPU). nvml.h (NVIDIA/go-nvml gen/nvml/nvml.h) says "One utilization sample structure is
  returned per process running, that had some non-zero utilization during the last sample
  period", "If no valid sample entries are found since the lastSeenTimeStamp,
  NVML_ERROR_NOT_FOUND is returned", "Set lastSeenTimeStamp to a timeStamp retrieved from a
  previous query to read utilization since the previous query", and of the parameter "Return
  only samples with timestamp greater than lastSeenTimeStamp".
  AVERAGED: ONE row per process that was busy since `lastSeenTimeStamp`; its timeStamp is the
  moment the driver last sampled that process, its smUtil and memUtil the process's average over
  its samples newer than `lastSeenTimeStamp`, in percent ("utilization since the previous query",
  "based on all the samples" in the buffer; nvtop PR #91 and nvitop PR #85 saw a stale or missing
  lastSeenTimeStamp average over a longer span).
  PER_PERIOD: one row per process per sample period newer than `lastSeenTimeStamp` in which the
  process had non-zero utilization, each with that period's smUtil and memUtil and its own
  timeStamp ("return only samples with timestamp greater than lastSeenTimeStamp"), so a process
  appears once per busy period. pynvml sizes its buffer by the driver's count and returns every
  row it wrote (nvidia-ml-py pynvml.py, nvmlDeviceGetProcessUtilization), and DCGM keeps each
  row as one sample of its PID (NVIDIA/DCGM dcgmlib/src/DcgmCacheManager.cpp,
  DCGM_FI_DEV_GPU_UTIL_SAMPLES, averaged per PID in GetUniquePidUtilLists); nvitop sorts an
  answer's rows by timeStamp before keeping one per PID (XuehaiPan/nvitop nvitop/api/device.py).
  In both, nothing newer is NotFound. Which one real drivers do is not settled here:
  `make gpu-check` records it on a GPU (scripts/gpu_check_window.py: a process busy, idle, busy
  again, asked with several windows; it counts the rows each answer has for the process).
- Samples outlive their process until they age out of the buffer, so an answer may name PIDs that
  no longer run (nvtop#110: rows for zombie processes).
- Answers sometimes carry junk rows: PID 0 / timeStamp 0 padding and rows with impossible values
  (nvtop#110: "Count=100", "%SM=37100", TS=217144956601725 on a 2021 machine; DCGM#83: smUtil
  2147483632). `junk_rows` adds such rows, deterministically, to every `every`-th non-empty answer.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field
from enum import StrEnum

ZOMBIE_PID_BASE = 4_190_000  # junk rows name PIDs above every PID the simulator hands out
_DAY_US = 86_400 * 1_000_000


class ProcessRows(StrEnum):
    """Which reading of nvml.h the emulated driver answers process utilization with."""

    AVERAGED = "averaged"  # one row per busy process: its average since lastSeenTimeStamp
    PER_PERIOD = "per_period"  # one row per process per busy sample period since then


@dataclass(frozen=True)
class ProcessSample:
    """One sample period of one process, as the driver buffers it."""

    time_stamp_us: int
    sm_util: int  # percent of the sample period
    mem_util: int


@dataclass(frozen=True)
class UtilizationRow:
    """One row of an answer (the fields of nvmlProcessUtilizationSample_t the emulator fills)."""

    pid: int
    time_stamp_us: int
    sm_util: int
    mem_util: int


def phase_us(pid: int, period_us: int) -> int:
    """How far before each period boundary the driver samples `pid`: stable, 0 <= phase < period."""
    return (pid * 2_654_435_761) % period_us if period_us > 0 else 0


@dataclass
class SampleBuffer:
    """Every live process's samples for the last `buffer_s` seconds, idle periods included."""

    buffer_s: float
    by_pid: dict[int, deque[ProcessSample]] = field(default_factory=dict)

    def record(self, pid: int, boundary_us: int, period_us: int, sm: float, mem: float) -> None:
        """The sample of `pid` for the period ending at `boundary_us` (ratios 0..1)."""
        stamp = boundary_us - phase_us(pid, period_us)
        sample = ProcessSample(stamp, round(sm * 100), round(mem * 100))
        self.by_pid.setdefault(pid, deque()).append(sample)

    def expire(self, now_s: float) -> None:
        horizon = int((now_s - self.buffer_s) * 1e6)
        for pid in list(self.by_pid):
            samples = self.by_pid[pid]
            while samples and samples[0].time_stamp_us < horizon:
                samples.popleft()
            if not samples:
                del self.by_pid[pid]

    def since(
        self, last_seen_us: int, now_us: int, reading: ProcessRows = ProcessRows.AVERAGED
    ) -> list[UtilizationRow]:
        """The answer for the samples newer than `last_seen_us` and taken by `now_us`, read as
        `reading` says; processes idle in all of them have no row."""
        rows = []
        for pid, samples in self.by_pid.items():
            newer = _newer(samples, last_seen_us, now_us)
            busy = [s for s in newer if s.sm_util or s.mem_util]
            if not busy:
                continue
            if reading is ProcessRows.PER_PERIOD:
                rows += [UtilizationRow(pid, s.time_stamp_us, s.sm_util, s.mem_util) for s in busy]
                continue
            sm = sum(s.sm_util for s in newer) / len(newer)
            mem = sum(s.mem_util for s in newer) / len(newer)
            rows.append(UtilizationRow(pid, newer[-1].time_stamp_us, round(sm), round(mem)))
        if reading is ProcessRows.PER_PERIOD:  # in buffer (time) order: PIDs interleave
            return sorted(rows, key=lambda r: (r.time_stamp_us, r.pid))
        return sorted(rows, key=lambda r: r.pid)


def _newer(samples: deque[ProcessSample], last_seen_us: int, now_us: int) -> list[ProcessSample]:
    """The samples stamped in (last_seen_us, now_us], oldest first."""
    newer = []
    for s in reversed(samples):
        if s.time_stamp_us > now_us:
            continue  # not taken yet
        if s.time_stamp_us <= last_seen_us:
            break
        newer.append(s)
    newer.reverse()
    return newer


def junk_rows(answer: int, every: int, now_us: int) -> list[UtilizationRow]:
    """The junk the `answer`-th non-empty answer carries: none unless `every` divides it; then
    padding rows, a zombie row with impossible percentages and an old garbage timestamp, and a
    zombie row stamped in the future (garbage timestamps can land on either side of now)."""
    if every <= 0 or answer % every:
        return []
    zombie = ZOMBIE_PID_BASE + answer % 1000
    return [
        UtilizationRow(zombie, 217_144_956_601_725, 37_100, 50_583),
        UtilizationRow(zombie + 1, now_us + 3 * _DAY_US, 38, 12),
        UtilizationRow(0, 0, 0, 0),
        UtilizationRow(0, 0, 0, 0),
    ]
