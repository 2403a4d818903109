"""The emulator's device calls: the driver branch decides which functions exist, MIG refusals,
privileges, field values and memory info as nvml.h describes them."""

from __future__ import annotations

import pytest
from exporter_fakes import emulator

from exporter.sim.nvml import library as simnvml
from exporter.sim.nvml.device import SimProcess, h100


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
    lib = emulator(clock, [gpu])
    (fv,) = lib.nvmlDeviceGetFieldValues(lib.nvmlDeviceGetHandleByIndex(0), [82])
    member = simnvml.VALUE_MEMBERS[value_type]
    assert fv.valueType == value_type and getattr(fv.value, member) == round(gpu.temperature_c) + 6


def test_mig_enumeration_and_refusals(clock: list[float]) -> None:
    gpu = h100(0, mig=True)
    assert gpu.mig is not None
    gpu.mig[3] = None  # an empty slot
    lib = emulator(clock, [gpu])
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


def test_memory_info_versions_agree(clock: list[float]) -> None:
    gpu = h100(0)
    gpu.processes.append(SimProcess(1, memory_bytes=lambda t: 3 << 30))
    lib = emulator(clock, [gpu])
    h = lib.nvmlDeviceGetHandleByIndex(0)
    v1 = lib.nvmlDeviceGetMemoryInfo(h)
    v2 = lib.nvmlDeviceGetMemoryInfo(h, simnvml.nvmlMemory_v2)
    assert v1.total == v2.total == v1.free + v1.used
    assert v2.total == v2.free + v2.used + v2.reserved  # type: ignore[union-attr]
    assert v2.used == 3 << 30
