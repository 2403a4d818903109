"""The driver's sample buffer: exited processes keep their rows, and junk comes every nth answer."""

from __future__ import annotations

from exporter_fakes import emulator

from exporter.sim.nvml.device import SimProcess, h100


def test_exited_processes_keep_rows_and_junk_comes_every_nth_answer(clock: list[float]) -> None:
    gpu = h100(0)
    gpu.junk_every = 2
    gpu.processes.append(SimProcess(7, sm=lambda t: 0.5, alive=lambda t: t < 1_005))
    lib = emulator(clock, [gpu])
    handle = lib.nvmlDeviceGetHandleByIndex(0)
    clock[0] += 10
    assert lib.nvmlDeviceGetComputeRunningProcesses(handle) == []
    first = lib.nvmlDeviceGetProcessUtilization(handle, 0)
    assert [r.pid for r in first] == [7]  # exited, still in the driver's buffer
    second = lib.nvmlDeviceGetProcessUtilization(handle, 0)
    junk = [r for r in second if r.pid != 7]
    assert {r.pid for r in junk} >= {0} and any(r.smUtil > 100 for r in junk)
