"""The emulator's process calls: one averaged row per busy process, or one row per busy sample
period (the two readings of nvml.h), none for idle ones."""

from __future__ import annotations

from itertools import pairwise

import pytest
from exporter_fakes import emulator

from exporter.sim.nvml import library as simnvml
from exporter.sim.nvml.device import SimProcess, h100
from exporter.sim.nvml.sampling import ProcessRows


def test_process_utilization_answers_one_averaged_row_per_busy_process(
    clock: list[float],
) -> None:
    """nvml.h: one structure per process; go-nvml#51 / nvtop#110: per-process timestamps."""
    gpu = h100(0)
    gpu.junk_every = 0
    gpu.processes.append(SimProcess(7, sm=lambda t: 0.5, memory_bytes=lambda t: 1 << 30))
    gpu.processes.append(SimProcess(8, sm=lambda t: 1.0 if t % 10 < 3 else 0.0))
    gpu.processes.append(SimProcess(9, sm=lambda t: 0.0))
    lib = emulator(clock, [gpu])
    handle = lib.nvmlDeviceGetHandleByIndex(0)
    since = int(clock[0] * 1e6)
    clock[0] += 10
    rows = {s.pid: s for s in lib.nvmlDeviceGetProcessUtilization(handle, since)}
    assert set(rows) == {7, 8}  # 9 was idle: no row
    assert (rows[7].smUtil, rows[8].smUtil) == (50, 30)  # averages over the 10 s, in percent
    assert rows[7].timeStamp != rows[8].timeStamp  # sampled on their own phases
    now = int(clock[0] * 1e6)
    assert all(now - 1_000_000 < r.timeStamp <= now for r in rows.values())
    with pytest.raises(simnvml.NVMLError_NotFound):
        lib.nvmlDeviceGetProcessUtilization(handle, now)
    clock[0] += 3
    newer = {r.pid: r for r in lib.nvmlDeviceGetProcessUtilization(handle, now)}
    assert {pid: r.smUtil for pid, r in newer.items()} == {7: 50, 8: 100}
    assert all(r.timeStamp > now for r in newer.values())


def test_idle_process_emits_no_samples(clock: list[float]) -> None:
    gpu = h100(0)
    gpu.processes.append(SimProcess(7, sm=lambda t: 0.0, memory_bytes=lambda t: 1 << 30))
    lib = emulator(clock, [gpu])
    clock[0] += 30
    handle = lib.nvmlDeviceGetHandleByIndex(0)
    with pytest.raises(simnvml.NVMLError_NotFound):
        lib.nvmlDeviceGetProcessUtilization(handle, 0)
    (proc,) = lib.nvmlDeviceGetComputeRunningProcesses(handle)
    assert (proc.pid, proc.usedGpuMemory) == (7, 1 << 30)
    assert proc.gpuInstanceId == simnvml.NVML_VALUE_NOT_AVAILABLE_uint


def test_per_period_rows_answer_one_row_per_busy_sample_period(clock: list[float]) -> None:
    """The other reading of nvml.h ("Return only samples with timestamp greater than
    lastSeenTimeStamp"): a process appears once per sample period in which it was busy, with that
    period's values and timestamp; its idle periods have no row."""
    gpu = h100(0)
    gpu.junk_every = 0
    gpu.process_rows = ProcessRows.PER_PERIOD
    gpu.processes.append(SimProcess(7, sm=lambda t: 0.5))
    gpu.processes.append(SimProcess(8, sm=lambda t: 1.0 if t % 10 < 3 else 0.0))
    gpu.processes.append(SimProcess(9, sm=lambda t: 0.0))
    lib = emulator(clock, [gpu])
    handle = lib.nvmlDeviceGetHandleByIndex(0)
    since = int(clock[0] * 1e6)
    clock[0] += 10
    answer = lib.nvmlDeviceGetProcessUtilization(handle, since)
    by_pid: dict[int, list[tuple[int, int]]] = {}
    for r in answer:
        by_pid.setdefault(r.pid, []).append((r.timeStamp, r.smUtil))
    assert set(by_pid) == {7, 8}  # 9 was idle in every period: no row
    assert [sm for _, sm in by_pid[7]] == [50] * 10  # one row per 1 s period, not an average
    assert [sm for _, sm in by_pid[8]] == [100] * 3  # busy 3 of the 10 periods
    for rows in by_pid.values():
        stamps = [ts for ts, _ in rows]
        assert all(b - a == 1_000_000 for a, b in pairwise(stamps))
        assert all(since < ts <= since + 10_000_000 for ts in stamps)
    assert by_pid[7][0][0] != by_pid[8][0][0]  # each process sampled on its own phase
    now = int(clock[0] * 1e6)
    with pytest.raises(simnvml.NVMLError_NotFound):
        lib.nvmlDeviceGetProcessUtilization(handle, now)


def test_both_readings_answer_from_the_same_samples(clock: list[float]) -> None:
    """One driver buffer, two readings: the averaged row is the mean of the per-period rows over
    every period of the window, idle ones counting 0."""
    gpus = [h100(0), h100(1)]
    for gpu, rows in zip(gpus, ProcessRows, strict=True):
        gpu.junk_every, gpu.process_rows = 0, rows
        gpu.processes.append(SimProcess(7, sm=lambda t: 0.8 if t % 4 < 1 else 0.0))
    lib = emulator(clock, gpus)
    since = int(clock[0] * 1e6)
    clock[0] += 20
    averaged, per_period = (
        lib.nvmlDeviceGetProcessUtilization(lib.nvmlDeviceGetHandleByIndex(i), since)
        for i in (0, 1)
    )
    assert [(r.pid, r.smUtil) for r in averaged] == [(7, 20)]
    assert [r.smUtil for r in per_period] == [80] * 5
    # the averaged row carries the process's last sample, idle or not; a period's row its own
    assert averaged[0].timeStamp - per_period[-1].timeStamp == 3_000_000
