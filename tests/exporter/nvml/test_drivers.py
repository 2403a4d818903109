"""The NVML source across driver branches and privileges: what an older driver lacks, what the
DaemonSet (no privileges) cannot see on MIG, how field values and temperatures are read."""

from __future__ import annotations

import pytest
from exporter_fakes import EmulatedNode

from exporter.sim.nvml import library as simnvml
from exporter.sim.nvml.device import SimGpu, SimProcess, h100

GIB = 1 << 30
XID = "DCGM_FI_DEV_XID_ERRORS"


def _mig_gpu(busy_gi: int = 8) -> SimGpu:
    gpu = h100(0, mig=True)
    gpu.processes.append(
        SimProcess(70, sm=lambda t: 0.5, memory_bytes=lambda t: 3 * GIB, gpu_instance_id=busy_gi)
    )
    return gpu


@pytest.mark.parametrize("privileged", [True, False], ids=["privileged", "daemonset"])
def test_mig_memory_is_on_the_instances_only_so_a_sum_counts_each_byte_once(
    privileged: bool,
) -> None:
    node = EmulatedNode([_mig_gpu()], privileged=privileged)
    sweeps = [node.sweep() for _ in range(3)]
    parent, *instances = sweeps[-1].devices
    assert all(all(s.collector_success.values()) and not s.errors for s in sweeps)
    fb = ("DCGM_FI_DEV_FB_USED", "DCGM_FI_DEV_FB_FREE", "DCGM_FI_DEV_FB_RESERVED")
    assert not set(fb) & set(parent.values)  # the GPU's aggregate would repeat the instances'
    assert sum(d.values[fb[0]] for d in sweeps[-1].devices if fb[0] in d.values) == 3 * 1024
    assert sum(d.values[fb[0]] + d.values[fb[1]] for d in instances) == 7 * 9856
    assert "DCGM_FI_DEV_POWER_USAGE" in parent.values  # board sensors stay on the GPU
    denied = {
        call
        for key, call in node.source.unsupported
        if key == (parent.uuid, True) and call.startswith("nvmlDeviceGetMemoryInfo")
    }
    assert bool(denied) is not privileged  # NoPermission: not asked again, not a failure
    assert node.lib.calls["nvmlDeviceGetMemoryInfo"] <= 2 + 3 * 7 + 3


def test_without_privileges_instances_show_no_xid_value_and_nothing_fails() -> None:
    node = EmulatedNode([_mig_gpu()], privileged=False)
    node.sweep()
    assert node.lib.raise_xid(0, 43, gpu_instance_id=8) == 0  # NVML does not deliver it
    assert node.lib.raise_xid(0, 79) == 1  # a whole-device event is delivered
    sweep = node.sweep()
    parent, *instances = sweep.devices
    assert parent.values[XID] == 79
    assert all(XID not in d.values for d in instances)  # unknown, not "no XID"
    assert all(sweep.collector_success.values())


def test_with_privileges_instances_show_their_xids() -> None:
    node = EmulatedNode([_mig_gpu()], privileged=True)
    node.sweep()
    assert node.lib.raise_xid(0, 43, gpu_instance_id=8) == 1
    _, *instances = node.sweep().devices
    by_gi = {d.mig.gpu_instance_id: d.values[XID] for d in instances if d.mig}
    assert by_gi[8] == 43 and by_gi[7] == 0


@pytest.mark.parametrize(
    ("driver", "temperature_call"),
    [
        pytest.param("535.183.01", "nvmlDeviceGetTemperature", id="r535-deprecated-call"),
        pytest.param("570.86.15", "nvmlDeviceGetTemperatureV", id="r570-temperature-v"),
    ],
)
def test_temperature_prefers_temperature_v_and_falls_back(
    driver: str, temperature_call: str
) -> None:
    node = EmulatedNode([h100(0)], driver=driver)
    sweeps = [node.sweep() for _ in range(3)]
    (dev,) = sweeps[-1].devices
    assert dev.values["DCGM_FI_DEV_GPU_TEMP"] == round(node.lib.gpus[0].temperature_c)
    assert all(not s.errors for s in sweeps)
    calls = node.lib.calls
    assert calls.get(temperature_call, 0) == 3
    other = ({"nvmlDeviceGetTemperature", "nvmlDeviceGetTemperatureV"} - {temperature_call}).pop()
    assert calls.get(other, 0) == 0


def test_a_pynvml_without_temperature_v_falls_back_too() -> None:
    """nvidia-ml-py older than the R570 API has no nvmlDeviceGetTemperatureV attribute."""

    class OldPynvml(simnvml.SimNvml):
        def __getattribute__(self, name: str) -> object:
            if name == "nvmlDeviceGetTemperatureV":
                raise AttributeError(name)
            return super().__getattribute__(name)

    node = EmulatedNode([h100(0)], driver="570.86.15")
    node.lib.__class__ = OldPynvml
    sweep = node.sweep()
    assert "DCGM_FI_DEV_GPU_TEMP" in sweep.devices[0].values and not sweep.errors


@pytest.mark.parametrize("value_type", range(7), ids=simnvml.VALUE_MEMBERS)
def test_field_values_are_read_by_their_value_type(value_type: int) -> None:
    gpu = h100(0)
    gpu.memory_temperature_type = value_type
    node = EmulatedNode([gpu])
    (dev,) = node.sweep().devices
    assert dev.values["DCGM_FI_DEV_MEMORY_TEMP"] == round(gpu.temperature_c) + 6
