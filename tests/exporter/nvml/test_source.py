"""The NVML source through the emulator: error semantics per call and per device, MIG, values."""

from __future__ import annotations

import pytest
from exporter_fakes import EmulatedNode, busy_gpus

from exporter.nvml.readings import NvmlCollector
from exporter.sim.nvml import library as simnvml
from exporter.sim.nvml.device import SimProcess, h100
from gpu_contract import DEVICE_METRICS

GIB = 1 << 30
# NotSupported, FunctionNotFound (an older driver) and NoPermission disable a call on a device.
DISABLING = [("NOT_SUPPORTED", 3), ("FUNCTION_NOT_FOUND", 13), ("NO_PERMISSION", 4)]
# NVML's state is gone: the sweep ends and NVML is initialized again.
RESTARTING = [("UNINITIALIZED", 1), ("DRIVER_NOT_LOADED", 9), ("LIB_RM_VERSION_MISMATCH", 18)]
# Every other NVML error the driver can return fails the call's collector on that device.
FAILURE_CODES = sorted(
    (name, code)
    for name, code in vars(simnvml).items()
    if name.startswith("NVML_ERROR_")
    and code not in {c for _, c in DISABLING + RESTARTING} | {0, 6}
)
# (call, collector, family it feeds) for each per-device reading.
DEVICE_CALLS = [
    ("nvmlDeviceGetMemoryInfo", NvmlCollector.MEMORY, "DCGM_FI_DEV_FB_USED"),
    ("nvmlDeviceGetUtilizationRates", NvmlCollector.UTILIZATION, "DCGM_FI_DEV_GPU_UTIL"),
    ("nvmlDeviceGetEncoderUtilization", NvmlCollector.UTILIZATION, "DCGM_FI_DEV_ENC_UTIL"),
    ("nvmlDeviceGetPowerUsage", NvmlCollector.POWER, "DCGM_FI_DEV_POWER_USAGE"),
    (
        "nvmlDeviceGetTotalEnergyConsumption",
        NvmlCollector.POWER,
        "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION",
    ),
    ("nvmlDeviceGetTemperature", NvmlCollector.THERMAL, "DCGM_FI_DEV_GPU_TEMP"),
    ("nvmlDeviceGetFieldValues", NvmlCollector.THERMAL, "DCGM_FI_DEV_MEMORY_TEMP"),
    ("nvmlDeviceGetClockInfo", NvmlCollector.CLOCKS, "DCGM_FI_DEV_SM_CLOCK"),
    ("nvmlDeviceGetPcieReplayCounter", NvmlCollector.PCIE, "DCGM_FI_DEV_PCIE_REPLAY_COUNTER"),
    ("nvmlGpmSampleGet", NvmlCollector.PROFILING, "DCGM_FI_PROF_GR_ENGINE_ACTIVE"),
]


def test_reads_every_dcgm_family_of_a_full_gpu() -> None:
    node = EmulatedNode(busy_gpus(1))
    node.sweep()
    sweep = node.sweep()
    (dev,) = sweep.devices
    missing = {m.name for m in DEVICE_METRICS} - set(dev.values)
    assert missing == set()
    assert dev.values["DCGM_FI_DEV_XID_ERRORS"] == 0.0  # no XID seen
    assert dev.values["DCGM_FI_DEV_GPU_UTIL"] == 50.0
    assert dev.values["DCGM_FI_DEV_FB_USED"] == 1024.0  # MiB
    assert dev.values["DCGM_FI_DEV_POWER_USAGE"] == pytest.approx(70 + 630 * 0.5)  # W
    assert dev.values["DCGM_FI_PROF_GR_ENGINE_ACTIVE"] == pytest.approx(0.5)  # ratio
    assert dev.uuid.startswith("GPU-") and dev.pci_bus_id == "00000000:18:00.0"
    assert all(sweep.collector_success.values()) and not sweep.errors


@pytest.mark.parametrize(
    ("call", "collector", "family"), DEVICE_CALLS, ids=[c[0] for c in DEVICE_CALLS]
)
@pytest.mark.parametrize(("error", "code"), FAILURE_CODES, ids=[n for n, _ in FAILURE_CODES])
def test_an_error_fails_that_collector_on_that_device_only(
    call: str, collector: str, family: str, error: str, code: int
) -> None:
    node = EmulatedNode(busy_gpus(2))
    node.sweep()
    node.lib.inject(call, code, index=1)
    sweep = node.sweep()
    by_index = {d.index: d for d in sweep.devices}
    assert family in by_index[0].values and not by_index[0].failed
    assert collector in by_index[1].failed
    assert family not in by_index[1].values
    assert sweep.collector_success[collector] is False
    assert sweep.errors[call] >= 1
    if code != simnvml.NVML_ERROR_GPU_IS_LOST:
        assert "DCGM_FI_DEV_FB_FREE" in by_index[1].values or collector == NvmlCollector.MEMORY
    node.lib.clear_faults()
    node.sweep()
    recovered = node.sweep()
    assert all(recovered.collector_success.values())


@pytest.mark.parametrize(
    ("call", "collector", "family"), DEVICE_CALLS, ids=[c[0] for c in DEVICE_CALLS]
)
@pytest.mark.parametrize(("error", "code"), DISABLING, ids=[n for n, _ in DISABLING])
def test_not_supported_disables_the_call_without_failing(
    call: str, collector: str, family: str, error: str, code: int
) -> None:
    node = EmulatedNode(busy_gpus(2))
    node.lib.inject(call, code, index=0)
    sweeps = [node.sweep() for _ in range(3)]
    assert all(all(s.collector_success.values()) and not s.errors for s in sweeps)
    dev0 = {d.index: d for d in sweeps[-1].devices}[0]
    dev1 = {d.index: d for d in sweeps[-1].devices}[1]
    assert family in dev1.values and family not in dev0.values
    assert node.lib.calls[call] <= 2 + 3 * 2  # made once for device 0, then never retried


def test_memory_falls_back_to_v1_on_older_drivers() -> None:
    node = EmulatedNode(busy_gpus(1), driver="470.256.02")  # before R510: no _v2 symbol
    sweeps = [node.sweep() for _ in range(3)]
    (dev,) = sweeps[-1].devices
    assert all(all(s.collector_success.values()) and not s.errors for s in sweeps)
    assert dev.values["DCGM_FI_DEV_FB_USED"] == 1024.0 + 527.0  # v1 `used` includes reserved
    assert "DCGM_FI_DEV_FB_RESERVED" not in dev.values
    assert node.lib.calls["nvmlDeviceGetMemoryInfo"] == 3  # v1 only: v2 was never found


def test_gpu_is_lost_on_one_gpu_keeps_the_others() -> None:
    node = EmulatedNode(busy_gpus(3))
    node.sweep()
    node.lib.inject("*", simnvml.NVML_ERROR_GPU_IS_LOST, index=1)
    sweep = node.sweep()
    by_index = {d.index: d for d in sweep.devices}
    assert set(by_index) == {0, 1, 2}
    assert by_index[1].failed and not by_index[1].values
    assert by_index[0].values and by_index[2].values and not by_index[2].failed
    assert by_index[0].processes and by_index[2].processes
    assert sweep.errors == {"nvmlDeviceGetHandleByIndex": 1}


def test_init_failure_is_a_failed_sweep_and_is_retried() -> None:
    node = EmulatedNode(busy_gpus(1))
    node.lib.inject("nvmlInit", simnvml.NVML_ERROR_DRIVER_NOT_LOADED, times=1)
    first = node.sweep()
    assert first.devices == () and first.collector_success[NvmlCollector.IDENTITY] is False
    assert first.errors == {"nvmlInit": 1}
    second = node.sweep()
    assert len(second.devices) == 1 and all(second.collector_success.values())


def test_no_process_samples_means_idle_not_failure() -> None:
    gpus = [h100(0)]
    gpus[0].processes.append(SimProcess(5, sm=lambda t: 0.0, memory_bytes=lambda t: 2 * GIB))
    node = EmulatedNode(gpus)
    sweep = node.sweep()
    (dev,) = sweep.devices
    (proc,) = dev.processes
    assert (proc.pid, proc.sm_util, proc.memory_bytes) == (5, 0.0, 2 * GIB)
    assert all(sweep.collector_success.values())


def test_mig_instances_with_empty_slots() -> None:
    gpu = h100(0, mig=True)
    assert gpu.mig is not None
    gpu.mig[1] = gpu.mig[5] = None
    gi = gpu.mig[2].gpu_instance_id  # type: ignore[union-attr]
    gpu.processes.append(
        SimProcess(77, sm=lambda t: 0.4, memory_bytes=lambda t: GIB, gpu_instance_id=gi)
    )
    node = EmulatedNode([gpu])
    node.sweep()
    sweep = node.sweep()
    parent, *instances = sweep.devices
    assert parent.mig is None and "DCGM_FI_DEV_GPU_UTIL" not in parent.values
    assert [d.mig.gpu_instance_id for d in instances if d.mig] == [7, 9, 10, 11, 13]
    busy = next(d for d in instances if d.mig and d.mig.gpu_instance_id == gi)
    assert busy.mig is not None and busy.mig.profile == "1g.10gb" and busy.mig.parent_index == 0
    assert busy.uuid == parent.uuid and busy.mig_uuid and busy.mig_uuid.startswith("MIG-")
    assert busy.values["DCGM_FI_PROF_GR_ENGINE_ACTIVE"] == pytest.approx(0.4)
    assert busy.values["DCGM_FI_DEV_FB_USED"] == 1024.0
    (proc,) = busy.processes
    assert (proc.pid, proc.sm_util) == (77, pytest.approx(0.4))
    assert all(sweep.collector_success.values()), sweep.errors
