"""The NVML source's state over time: NVML losing its state, disabled calls and MIG toggles,
and devices whose processes cannot be read (unknown, never idle)."""

from __future__ import annotations

import pytest
from exporter_fakes import EmulatedNode

from exporter.nvml.readings import NvmlCollector
from exporter.sim.nvml import library as simnvml
from exporter.sim.nvml.device import SimGpu, SimProcess, h100

GIB = 1 << 30
RESTARTING = [
    ("UNINITIALIZED", simnvml.NVML_ERROR_UNINITIALIZED),
    ("DRIVER_NOT_LOADED", simnvml.NVML_ERROR_DRIVER_NOT_LOADED),
    ("LIB_RM_VERSION_MISMATCH", simnvml.NVML_ERROR_LIB_RM_VERSION_MISMATCH),
]


def _busy(n: int) -> list[SimGpu]:
    gpus = [h100(i) for i in range(n)]
    for g in gpus:
        g.processes.append(SimProcess(100 + g.index, sm=lambda t: 0.5, memory_bytes=lambda t: GIB))
    return gpus


@pytest.mark.parametrize(("error", "code"), RESTARTING, ids=[e for e, _ in RESTARTING])
def test_nvml_losing_its_state_shuts_down_reinitializes_and_drops_every_cache(
    error: str, code: int
) -> None:
    node = EmulatedNode(_busy(2))
    node.lib.inject("nvmlDeviceGetPowerUsage", simnvml.NVML_ERROR_NOT_SUPPORTED, index=0, times=1)
    node.sweep()
    assert any(call == "nvmlDeviceGetPowerUsage" for _, call in node.source.unsupported)
    uuid_calls = node.lib.calls["nvmlDeviceGetUUID"]
    node.lib.gpus.reverse()  # what a driver reload may do to the enumeration order
    for i, gpu in enumerate(node.lib.gpus):
        gpu.index = i
    node.lib.inject("nvmlDeviceGetTemperature", code, index=0, times=1)
    failed = node.sweep()
    assert failed.errors.get("nvmlDeviceGetTemperature") == 1
    assert node.lib.calls["nvmlShutdown"] == 1 and node.source.restarts == 1
    assert all(d.processes is None for d in failed.devices)  # the sweep ended: unknown
    assert node.source.unsupported == frozenset()  # every cache dropped
    recovered = node.sweep()
    assert node.lib.calls["nvmlInit"] == 2
    assert node.lib.calls["nvmlDeviceGetUUID"] > uuid_calls  # identities read afresh
    assert [d.uuid for d in recovered.devices] == [g.uuid for g in node.lib.gpus]
    assert all("DCGM_FI_DEV_POWER_USAGE" in d.values for d in recovered.devices)
    assert all(recovered.collector_success.values()) and not recovered.errors


def test_disabled_calls_are_keyed_by_uuid_and_mig_mode() -> None:
    gpu = h100(0)
    node = EmulatedNode([gpu])
    node.lib.inject("nvmlDeviceGetPowerUsage", simnvml.NVML_ERROR_NOT_SUPPORTED, times=1)
    node.sweep()
    assert "DCGM_FI_DEV_POWER_USAGE" not in node.sweep().devices[0].values  # not asked again
    gpu.mig = h100(0, mig=True).mig  # MIG enabled (a GPU reset in between, as on a real node)
    assert "DCGM_FI_DEV_POWER_USAGE" in node.sweep().devices[0].values  # asked again
    node.lib.inject("nvmlDeviceGetPowerUsage", simnvml.NVML_ERROR_NOT_SUPPORTED, times=1)
    node.sweep()
    gpu.mig = None  # and disabled again: the earlier NotSupported belonged to MIG mode off
    assert "DCGM_FI_DEV_POWER_USAGE" not in node.sweep().devices[0].values


@pytest.mark.parametrize(
    ("call", "code"),
    [
        ("nvmlDeviceGetComputeRunningProcesses_v3", simnvml.NVML_ERROR_UNKNOWN),
        ("nvmlDeviceGetMPSComputeRunningProcesses_v3", simnvml.NVML_ERROR_UNKNOWN),
        ("nvmlDeviceGetProcessUtilization", simnvml.NVML_ERROR_UNKNOWN),
        ("nvmlDeviceGetProcessUtilization", simnvml.NVML_ERROR_TIMEOUT),
        ("*", simnvml.NVML_ERROR_GPU_IS_LOST),
    ],
    ids=["compute-list", "mps-list", "utilization", "utilization-timeout", "gpu-lost"],
)
def test_unreadable_processes_are_unknown_and_counted(call: str, code: int) -> None:
    node = EmulatedNode(_busy(2))
    node.sweep()
    node.lib.inject(call, code, index=1)
    sweep = node.sweep()
    by_index = {d.index: d for d in sweep.devices}
    assert by_index[0].processes and by_index[0].processes[0].sm_util == pytest.approx(0.5)
    if call == "nvmlDeviceGetProcessUtilization":  # the list is known, the activity is not
        (proc,) = by_index[1].processes or ()
        assert proc.sm_util != proc.sm_util and proc.memory_bytes == GIB
    else:
        assert by_index[1].processes is None
    assert sweep.collector_success[NvmlCollector.PROCESSES] is False or code == 15
    assert sum(sweep.errors.values()) >= 1
