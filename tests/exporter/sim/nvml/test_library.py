"""The emulated library: init state, injected faults, and the module standing in for pynvml."""

from __future__ import annotations

import pytest
from exporter_fakes import emulator

from exporter.sim.nvml import library as simnvml
from exporter.sim.nvml.device import h100


def test_calls_before_init_raise_uninitialized(clock: list[float]) -> None:
    lib = simnvml.SimNvml([h100(0)], clock=lambda: clock[0])
    with pytest.raises(simnvml.NVMLError_Uninitialized):
        lib.nvmlDeviceGetCount()
    lib.nvmlInit()
    assert lib.nvmlDeviceGetCount() == 1
    lib.nvmlShutdown()
    with pytest.raises(simnvml.NVMLError_Uninitialized):
        lib.nvmlDeviceGetHandleByIndex(0)


@pytest.mark.parametrize("times", [1, 2], ids=["once", "twice"])
def test_injected_fault_for_one_device(clock: list[float], times: int) -> None:
    lib = emulator(clock, [h100(0), h100(1)])
    lib.inject("nvmlDeviceGetPowerUsage", simnvml.NVML_ERROR_GPU_IS_LOST, index=1, times=times)
    h0, h1 = lib.nvmlDeviceGetHandleByIndex(0), lib.nvmlDeviceGetHandleByIndex(1)
    assert lib.nvmlDeviceGetPowerUsage(h0) > 0
    for _ in range(times):
        with pytest.raises(simnvml.NVMLError_GpuIsLost):
            lib.nvmlDeviceGetPowerUsage(h1)
    assert lib.nvmlDeviceGetPowerUsage(h1) > 0


def test_module_stands_in_for_pynvml(clock: list[float]) -> None:
    lib = simnvml.SimNvml([h100(0)], clock=lambda: clock[0])
    simnvml.install(lib)
    try:
        simnvml.nvmlInit()
        assert simnvml.nvmlDeviceGetCount() == 1
    finally:
        simnvml.install(None)
    with pytest.raises(simnvml.NVMLError_LibraryNotFound):
        simnvml.nvmlInit()
