"""The NVML emulator against pynvml's own definitions and NVML's documented semantics."""

from __future__ import annotations

import re
import string
from pathlib import Path

import pytest

from exporter import simnvml
from exporter.simnvml_device import SimGpu, SimProcess, h100

PYNVML_SOURCE = Path(__file__).resolve().parents[2] / ".venv/lib/python3.11/site-packages/pynvml.py"


def _pynvml_error_codes() -> dict[str, int]:
    """NVML_ERROR_* constants as nvidia-ml-py defines them (read as text: no pynvml import)."""
    text = PYNVML_SOURCE.read_text()
    return {m[0]: int(m[1]) for m in re.findall(r"^(NVML_ERROR_\w+)\s*=\s*(\d+)", text, re.M)}


def _class_name(constant: str) -> str:
    # pynvml's own rule (_extractNVMLErrorsAsClasses)
    words = string.capwords(constant.replace("NVML_ERROR_", ""), "_")
    return "NVMLError_" + words.replace("_", "")


@pytest.fixture
def clock() -> list[float]:
    return [1_000.0]


def _lib(clock: list[float], gpus: list[SimGpu]) -> simnvml.SimNvml:
    lib = simnvml.SimNvml(gpus, clock=lambda: clock[0])
    lib.nvmlInit()
    return lib


@pytest.mark.skipif(not PYNVML_SOURCE.exists(), reason="nvidia-ml-py not installed in .venv")
@pytest.mark.parametrize(
    "constant", sorted(_pynvml_error_codes() if PYNVML_SOURCE.exists() else {})
)
def test_error_classes_match_pynvml(constant: str) -> None:
    code = _pynvml_error_codes()[constant]
    assert getattr(simnvml, constant) == code
    cls = getattr(simnvml, _class_name(constant))
    err = simnvml.NVMLError(code)
    assert type(err) is cls
    assert cls().value == code
    assert isinstance(err, simnvml.NVMLError)


def test_calls_before_init_raise_uninitialized(clock: list[float]) -> None:
    lib = simnvml.SimNvml([h100(0)], clock=lambda: clock[0])
    with pytest.raises(simnvml.NVMLError_Uninitialized):
        lib.nvmlDeviceGetCount()
    lib.nvmlInit()
    assert lib.nvmlDeviceGetCount() == 1
    lib.nvmlShutdown()
    with pytest.raises(simnvml.NVMLError_Uninitialized):
        lib.nvmlDeviceGetHandleByIndex(0)


def test_process_utilization_returns_only_newer_samples(clock: list[float]) -> None:
    gpu = h100(0)
    gpu.processes.append(SimProcess(7, sm=lambda t: 0.5, memory_bytes=lambda t: 1 << 30))
    lib = _lib(clock, [gpu])
    handle = lib.nvmlDeviceGetHandleByIndex(0)
    clock[0] += 10
    samples = lib.nvmlDeviceGetProcessUtilization(handle, 0)
    assert [s.smUtil for s in samples] == [50] * 10
    last = max(s.timeStamp for s in samples)
    with pytest.raises(simnvml.NVMLError_NotFound):
        lib.nvmlDeviceGetProcessUtilization(handle, last)
    clock[0] += 3
    newer = lib.nvmlDeviceGetProcessUtilization(handle, last)
    assert len(newer) == 3
    assert all(s.timeStamp > last and s.pid == 7 for s in newer)


def test_idle_process_emits_no_samples(clock: list[float]) -> None:
    gpu = h100(0)
    gpu.processes.append(SimProcess(7, sm=lambda t: 0.0, memory_bytes=lambda t: 1 << 30))
    lib = _lib(clock, [gpu])
    clock[0] += 30
    handle = lib.nvmlDeviceGetHandleByIndex(0)
    with pytest.raises(simnvml.NVMLError_NotFound):
        lib.nvmlDeviceGetProcessUtilization(handle, 0)
    (proc,) = lib.nvmlDeviceGetComputeRunningProcesses(handle)
    assert (proc.pid, proc.usedGpuMemory) == (7, 1 << 30)
    assert proc.gpuInstanceId == simnvml.NVML_VALUE_NOT_AVAILABLE_uint


def test_mig_enumeration_and_refusals(clock: list[float]) -> None:
    gpu = h100(0, mig=True)
    assert gpu.mig is not None
    gpu.mig[3] = None  # an empty slot
    lib = _lib(clock, [gpu])
    parent = lib.nvmlDeviceGetHandleByIndex(0)
    assert lib.nvmlDeviceGetMigMode(parent) == [1, 1]
    assert lib.nvmlDeviceGetMaxMigDeviceCount(parent) == 7
    with pytest.raises(simnvml.NVMLError_NotFound):
        lib.nvmlDeviceGetMigDeviceHandleByIndex(parent, 3)
    with pytest.raises(simnvml.NVMLError_InvalidArgument):
        lib.nvmlDeviceGetMigDeviceHandleByIndex(parent, 7)
    mig = lib.nvmlDeviceGetMigDeviceHandleByIndex(parent, 4)
    assert lib.nvmlDeviceGetGpuInstanceId(mig) == gpu.mig[4].gpu_instance_id  # type: ignore[union-attr]
    assert lib.nvmlDeviceGetDeviceHandleFromMigDeviceHandle(mig) == parent
    assert lib.nvmlDeviceGetUUID(mig).startswith("MIG-")
    assert lib.nvmlDeviceGetName(mig).endswith("MIG 1g.10gb")
    for call in ("nvmlDeviceGetUtilizationRates",):
        with pytest.raises(simnvml.NVMLError_NotSupported):
            getattr(lib, call)(parent)
    with pytest.raises(simnvml.NVMLError_NotSupported):
        lib.nvmlDeviceGetProcessUtilization(parent, 0)
    with pytest.raises(simnvml.NVMLError_InvalidArgument):
        lib.nvmlDeviceGetGpuInstanceId(parent)


def test_gpm_measures_instance_activity(clock: list[float]) -> None:
    gpu = h100(0, mig=True)
    gi = gpu.mig[0].gpu_instance_id  # type: ignore[index,union-attr]
    gpu.processes.append(SimProcess(9, sm=lambda t: 0.25, gpu_instance_id=gi))
    lib = _lib(clock, [gpu])
    parent = lib.nvmlDeviceGetHandleByIndex(0)
    first = lib.nvmlGpmMigSampleGet(parent, gi, lib.nvmlGpmSampleAlloc())
    clock[0] += 20
    second = lib.nvmlGpmMigSampleGet(parent, gi, lib.nvmlGpmSampleAlloc())
    query = simnvml.c_nvmlGpmMetricsGet_t(simnvml.NVML_GPM_METRICS_GET_VERSION, 2, first, second)
    query.metrics[0].metricId = simnvml.NVML_GPM_METRIC_GRAPHICS_UTIL
    query.metrics[1].metricId = 9999
    lib.nvmlGpmMetricsGet(query)
    assert query.metrics[0].nvmlReturn == 0
    assert query.metrics[0].value == pytest.approx(25.0)
    assert query.metrics[1].nvmlReturn == simnvml.NVML_ERROR_NOT_SUPPORTED


def test_memory_info_versions_agree(clock: list[float]) -> None:
    gpu = h100(0)
    gpu.processes.append(SimProcess(1, memory_bytes=lambda t: 3 << 30))
    lib = _lib(clock, [gpu])
    h = lib.nvmlDeviceGetHandleByIndex(0)
    v1 = lib.nvmlDeviceGetMemoryInfo(h)
    v2 = lib.nvmlDeviceGetMemoryInfo(h, simnvml.nvmlMemory_v2)
    assert v1.total == v2.total == v1.free + v1.used
    assert v2.total == v2.free + v2.used + v2.reserved  # type: ignore[union-attr]
    assert v2.used == 3 << 30


@pytest.mark.parametrize("times", [1, 2], ids=["once", "twice"])
def test_injected_fault_for_one_device(clock: list[float], times: int) -> None:
    lib = _lib(clock, [h100(0), h100(1)])
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


def test_energy_and_power_follow_activity(clock: list[float]) -> None:
    busy, idle = h100(0), h100(1)
    busy.processes.append(SimProcess(1, sm=lambda t: 1.0))
    lib = _lib(clock, [busy, idle])
    clock[0] += 100
    h_busy, h_idle = lib.nvmlDeviceGetHandleByIndex(0), lib.nvmlDeviceGetHandleByIndex(1)
    assert lib.nvmlDeviceGetPowerUsage(h_busy) == busy.max_watts * 1000
    assert lib.nvmlDeviceGetTotalEnergyConsumption(h_busy) == pytest.approx(busy.max_watts * 100e3)
    assert lib.nvmlDeviceGetTotalEnergyConsumption(h_idle) == pytest.approx(idle.idle_watts * 100e3)
    sm = lib.nvmlDeviceGetClockInfo(h_busy, simnvml.NVML_CLOCK_SM)
    assert sm > lib.nvmlDeviceGetClockInfo(h_idle, simnvml.NVML_CLOCK_SM)
