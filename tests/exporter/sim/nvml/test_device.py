"""The emulated device state: energy and power follow the processes' activity."""

from __future__ import annotations

import pytest
from exporter_fakes import emulator

from exporter.sim.nvml import library as simnvml
from exporter.sim.nvml.device import SimGpu, SimProcess, h100


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


@pytest.mark.parametrize("into_period", [0.05, 0.5, 0.95])
@pytest.mark.parametrize("apart", [0.4, 2.0, 2.5])
def test_energy_between_two_reads_is_power_times_their_distance(
    clock: list[float], into_period: float, apart: float
) -> None:
    """Wherever the reads fall in the driver's sample periods, the counter moves by the power
    times the time between them, not by the whole periods that ended in between."""
    gpu = h100(0)
    gpu.processes.append(SimProcess(1, sm=lambda t: 1.0))
    lib = emulator(clock, [gpu])
    handle = lib.nvmlDeviceGetHandleByIndex(0)
    clock[0] = 1_000.0 + into_period * gpu.sample_period_s
    first = lib.nvmlDeviceGetTotalEnergyConsumption(handle)
    clock[0] += apart
    second = lib.nvmlDeviceGetTotalEnergyConsumption(handle)
    assert second - first == pytest.approx(gpu.max_watts * apart * 1000.0, abs=1.0)


def test_a_gpu_reads_the_same_whenever_its_emulator_was_created() -> None:
    """The first advance integrates `WARMUP_PERIODS` of history, so an emulator created late (a
    fake nvidia-smi) agrees with one that has run all along (the exporter's) on the same GPU."""

    def busy() -> SimGpu:
        gpu = h100(0)
        gpu.processes.append(SimProcess(1, sm=lambda t: 1.0))
        return gpu

    early_clock, late_clock = [1_000.0], [1_195.0]
    early, late = emulator(early_clock, [busy()]), emulator(late_clock, [busy()])
    early_clock[0] = late_clock[0] = 1_200.0
    temperatures = [
        lib.nvmlDeviceGetTemperature(
            lib.nvmlDeviceGetHandleByIndex(0), simnvml.NVML_TEMPERATURE_GPU
        )
        for lib in (early, late)
    ]
    assert temperatures[0] == temperatures[1] > 60  # a GPU busy for long runs hot
