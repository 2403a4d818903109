"""The emulated device state: energy and power follow the processes' activity."""

from __future__ import annotations

import pytest
from exporter_fakes import emulator

from exporter.sim.nvml import library as simnvml
from exporter.sim.nvml.device import SimProcess, h100


def test_energy_and_power_follow_activity(clock: list[float]) -> None:
    busy, idle = h100(0), h100(1)
    busy.processes.append(SimProcess(1, sm=lambda t: 1.0))
    lib = emulator(clock, [busy, idle])
    h_busy, h_idle = lib.nvmlDeviceGetHandleByIndex(0), lib.nvmlDeviceGetHandleByIndex(1)
    before = [lib.nvmlDeviceGetTotalEnergyConsumption(h) for h in (h_busy, h_idle)]
    clock[0] += 100
    assert lib.nvmlDeviceGetPowerUsage(h_busy) == busy.max_watts * 1000
    after = [lib.nvmlDeviceGetTotalEnergyConsumption(h) for h in (h_busy, h_idle)]
    assert after[0] - before[0] == pytest.approx(busy.max_watts * 100e3)
    assert after[1] - before[1] == pytest.approx(idle.idle_watts * 100e3)
    sm = lib.nvmlDeviceGetClockInfo(h_busy, simnvml.NVML_CLOCK_SM)
    assert sm > lib.nvmlDeviceGetClockInfo(h_idle, simnvml.NVML_CLOCK_SM)
