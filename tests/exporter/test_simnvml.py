"""The NVML emulator against pynvml's own definitions and NVML's documented semantics."""

from __future__ import annotations

import re
import string
from pathlib import Path

import pytest

from exporter.sim.nvml import library as simnvml
from exporter.sim.nvml.device import SimGpu, SimProcess, h100

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


def test_process_utilization_answers_one_averaged_row_per_busy_process(
    clock: list[float],
) -> None:
    """nvml.h: one structure per process; go-nvml#51 / nvtop#110: per-process timestamps."""
    gpu = h100(0)
    gpu.junk_every = 0
    gpu.processes.append(SimProcess(7, sm=lambda t: 0.5, memory_bytes=lambda t: 1 << 30))
    gpu.processes.append(SimProcess(8, sm=lambda t: 1.0 if t % 10 < 3 else 0.0))
    gpu.processes.append(SimProcess(9, sm=lambda t: 0.0))
    lib = _lib(clock, [gpu])
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


def test_exited_processes_keep_rows_and_junk_comes_every_nth_answer(clock: list[float]) -> None:
    gpu = h100(0)
    gpu.junk_every = 2
    gpu.processes.append(SimProcess(7, sm=lambda t: 0.5, alive=lambda t: t < 1_005))
    lib = _lib(clock, [gpu])
    handle = lib.nvmlDeviceGetHandleByIndex(0)
    clock[0] += 10
    assert lib.nvmlDeviceGetComputeRunningProcesses(handle) == []
    first = lib.nvmlDeviceGetProcessUtilization(handle, 0)
    assert [r.pid for r in first] == [7]  # exited, still in the driver's buffer
    second = lib.nvmlDeviceGetProcessUtilization(handle, 0)
    junk = [r for r in second if r.pid != 7]
    assert {r.pid for r in junk} >= {0} and any(r.smUtil > 100 for r in junk)


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


@pytest.mark.parametrize(
    ("driver", "missing"),
    [
        pytest.param(
            "470.256.02",
            {
                "nvmlDeviceGetComputeRunningProcesses_v3",
                "nvmlDeviceGetMPSComputeRunningProcesses_v3",
                "nvmlDeviceGetTemperatureV",
                "nvmlGpmSampleAlloc",
            },
            id="r470",
        ),
        pytest.param("535.183.01", {"nvmlDeviceGetTemperatureV"}, id="r535"),
        pytest.param("570.86.15", set(), id="r570"),
    ],
)
def test_functions_follow_the_driver_branch(
    clock: list[float], driver: str, missing: set[str]
) -> None:
    lib = simnvml.SimNvml([h100(0)], clock=lambda: clock[0], driver_version=driver)
    lib.nvmlInit()
    h = lib.nvmlDeviceGetHandleByIndex(0)
    calls = {
        "nvmlDeviceGetComputeRunningProcesses_v3": lambda: (
            lib.nvmlDeviceGetComputeRunningProcesses_v3(h)
        ),
        "nvmlDeviceGetMPSComputeRunningProcesses_v3": lambda: (
            lib.nvmlDeviceGetMPSComputeRunningProcesses_v3(h)
        ),
        "nvmlDeviceGetTemperatureV": lambda: lib.nvmlDeviceGetTemperatureV(h, 0),
        "nvmlGpmSampleAlloc": lib.nvmlGpmSampleAlloc,
    }
    for name, call in calls.items():
        if name in missing:
            with pytest.raises(simnvml.NVMLError_FunctionNotFound):
                call()
        else:
            call()
    if "nvmlDeviceGetComputeRunningProcesses_v3" in missing:  # pynvml's unversioned wrapper
        with pytest.raises(simnvml.NVMLLibraryMismatchError) as err:
            lib.nvmlDeviceGetComputeRunningProcesses(h)
        assert not hasattr(err.value, "value")
        assert lib.nvmlDeviceGetComputeRunningProcesses_v2(h) == []


def test_unprivileged_mig_parent_refuses_aggregates(clock: list[float]) -> None:
    """nvml.h: in MIG mode the parent's aggregates need privileges; instances answer."""
    gpu = h100(0, mig=True)
    lib = simnvml.SimNvml([gpu], clock=lambda: clock[0], privileged=False)
    lib.nvmlInit()
    parent = lib.nvmlDeviceGetHandleByIndex(0)
    for call in (
        lambda: lib.nvmlDeviceGetMemoryInfo(parent),
        lambda: lib.nvmlDeviceGetComputeRunningProcesses(parent),
    ):
        with pytest.raises(simnvml.NVMLError_NoPermission):
            call()
    mig = lib.nvmlDeviceGetMigDeviceHandleByIndex(parent, 0)
    assert lib.nvmlDeviceGetMemoryInfo(mig).total == 9856 << 20
    assert lib.nvmlDeviceGetComputeRunningProcesses(mig) == []


@pytest.mark.parametrize("value_type", range(7))
def test_field_values_fill_the_member_their_type_names(clock: list[float], value_type: int) -> None:
    gpu = h100(0)
    gpu.memory_temperature_type = value_type
    lib = _lib(clock, [gpu])
    (fv,) = lib.nvmlDeviceGetFieldValues(lib.nvmlDeviceGetHandleByIndex(0), [82])
    member = simnvml.VALUE_MEMBERS[value_type]
    assert fv.valueType == value_type and getattr(fv.value, member) == round(gpu.temperature_c) + 6


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
    h_busy, h_idle = lib.nvmlDeviceGetHandleByIndex(0), lib.nvmlDeviceGetHandleByIndex(1)
    before = [lib.nvmlDeviceGetTotalEnergyConsumption(h) for h in (h_busy, h_idle)]
    clock[0] += 100
    assert lib.nvmlDeviceGetPowerUsage(h_busy) == busy.max_watts * 1000
    after = [lib.nvmlDeviceGetTotalEnergyConsumption(h) for h in (h_busy, h_idle)]
    assert after[0] - before[0] == pytest.approx(busy.max_watts * 100e3)
    assert after[1] - before[1] == pytest.approx(idle.idle_watts * 100e3)
    sm = lib.nvmlDeviceGetClockInfo(h_busy, simnvml.NVML_CLOCK_SM)
    assert sm > lib.nvmlDeviceGetClockInfo(h_idle, simnvml.NVML_CLOCK_SM)
