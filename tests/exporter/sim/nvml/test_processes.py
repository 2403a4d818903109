"""The emulator's process calls: one averaged row per busy process, none for idle ones."""

from __future__ import annotations

import pytest
from exporter_fakes import emulator

from exporter.sim.nvml import library as simnvml
from exporter.sim.nvml.device import SimProcess, h100


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
