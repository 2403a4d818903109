"""The emulator's board calls: temperatures, field values, power, energy, clocks, PCIe, NVLink and
row remapping, as nvml.h documents them.

- `nvmlDeviceGetPcieThroughput(device, counter)`: "a byte counter over a 20ms interval", the
  throughput in KB/s; counter `NVML_PCIE_UTIL_TX_BYTES` (0) or `NVML_PCIE_UTIL_RX_BYTES` (1),
  anything else InvalidArgument; "not supported in virtual machines running virtual GPU".
- NVLink throughput is a field value: `NVML_FI_DEV_NVLINK_THROUGHPUT_DATA_TX` / `_RX` (138 /
  139), cumulative KiB, with the link id in `scopeId` ("A scopeId of UINT_MAX returns aggregate
  value summed up across all links"); pynvml takes `(fieldId, scopeId)` tuples. A GPU without
  NVLink answers NotSupported in the field's `nvmlReturn`; a link it lacks, InvalidArgument.
- `nvmlDeviceGetTotalEnergyConsumption(device)`: "total energy consumption for this GPU in
  millijoules (mJ) since the driver was last reloaded", Volta and newer; read at the moment asked.
- `nvmlDeviceGetRemappedRows(device)` -> `(corrRows, uncRows, isPending, failureOccurred)`, as
  pynvml returns them; Ampere and newer; NotSupported "If MIG is enabled".
Calls on a MIG instance's handle that only a physical GPU answers raise NotSupported.
"""

from __future__ import annotations

from collections.abc import Sequence

from exporter.sim.nvml.api import Handle, SimNvmlCalls
from exporter.sim.nvml.device import SimGpu
from exporter.sim.nvml.errors import (
    NVML_ERROR_INVALID_ARGUMENT,
    NVML_ERROR_NOT_SUPPORTED,
    NVMLError_InvalidArgument,
    NVMLError_NotSupported,
)
from exporter.sim.nvml.structs import (
    NVML_CLOCK_GRAPHICS,
    NVML_CLOCK_MEM,
    NVML_CLOCK_SM,
    NVML_FI_DEV_MEMORY_TEMP,
    NVML_FI_DEV_NVLINK_THROUGHPUT_DATA_RX,
    NVML_FI_DEV_NVLINK_THROUGHPUT_DATA_TX,
    NVML_PCIE_UTIL_RX_BYTES,
    NVML_PCIE_UTIL_TX_BYTES,
    NVML_TEMPERATURE_GPU,
    VALUE_MEMBERS,
    NVML_VALUE_NOT_AVAILABLE_uint,
    c_nvmlFieldValue_t,
    nvmlTemperature_v1,
)

_NVLINK_FIELDS = {  # field -> direction (TX 0, RX 1)
    NVML_FI_DEV_NVLINK_THROUGHPUT_DATA_TX: 0,
    NVML_FI_DEV_NVLINK_THROUGHPUT_DATA_RX: 1,
}
_ULL = 3  # NVML_VALUE_TYPE_UNSIGNED_LONG_LONG


class SimNvmlBoardCalls(SimNvmlCalls):
    def nvmlDeviceGetTemperature(self, handle: Handle, sensor: int) -> int:
        """Deprecated in nvml.h ("Use nvmlDeviceGetTemperatureV instead"), still in every driver."""
        gpu = self._full("nvmlDeviceGetTemperature", handle)
        if sensor != NVML_TEMPERATURE_GPU:
            raise NVMLError_InvalidArgument()
        return round(gpu.temperature_c)

    def nvmlDeviceGetTemperatureV(
        self, handle: Handle, sensor: int, version: int = nvmlTemperature_v1
    ) -> int:
        self._requires(570)
        gpu = self._full("nvmlDeviceGetTemperatureV", handle)
        if sensor != NVML_TEMPERATURE_GPU or version != nvmlTemperature_v1:
            raise NVMLError_InvalidArgument()
        return round(gpu.temperature_c)

    def nvmlDeviceGetFieldValues(
        self,
        handle: Handle,
        fieldIds: Sequence[int | tuple[int, int]],
    ) -> list[c_nvmlFieldValue_t]:
        gpu = self._full("nvmlDeviceGetFieldValues", handle)
        out = []
        for requested in fieldIds:
            field_id, scope = requested if isinstance(requested, tuple) else (requested, 0)
            fv = c_nvmlFieldValue_t(fieldId=field_id, scopeId=scope)
            fv.timestamp = int(self.clock() * 1e6)
            if field_id == NVML_FI_DEV_MEMORY_TEMP and gpu.memory_temperature_supported:
                fv.valueType = gpu.memory_temperature_type
                member = VALUE_MEMBERS[fv.valueType]
                celsius = round(gpu.temperature_c) + 6
                setattr(fv.value, member, float(celsius) if member == "dVal" else celsius)
            elif field_id in _NVLINK_FIELDS:
                _nvlink_value(gpu, fv, _NVLINK_FIELDS[field_id], scope)
            else:
                fv.nvmlReturn = NVML_ERROR_NOT_SUPPORTED
            out.append(fv)
        return out

    def nvmlDeviceGetPowerUsage(self, handle: Handle) -> int:
        return round(self._full("nvmlDeviceGetPowerUsage", handle).power_watts() * 1000)

    def nvmlDeviceGetTotalEnergyConsumption(self, handle: Handle) -> int:
        gpu = self._full("nvmlDeviceGetTotalEnergyConsumption", handle)
        return int(gpu.energy_mj_at(self.clock()))

    def nvmlDeviceGetClockInfo(self, handle: Handle, type: int) -> int:
        gpu = self._full("nvmlDeviceGetClockInfo", handle)
        if type in (NVML_CLOCK_SM, NVML_CLOCK_GRAPHICS):
            return gpu.sm_clock_mhz()
        if type == NVML_CLOCK_MEM:
            return gpu.mem_clock_mhz
        raise NVMLError_InvalidArgument()

    def nvmlDeviceGetPcieReplayCounter(self, handle: Handle) -> int:
        return self._full("nvmlDeviceGetPcieReplayCounter", handle).pcie_replay_counter

    def nvmlDeviceGetPcieThroughput(self, device: Handle, counter: int) -> int:
        gpu = self._full("nvmlDeviceGetPcieThroughput", device)
        if counter not in (NVML_PCIE_UTIL_TX_BYTES, NVML_PCIE_UTIL_RX_BYTES):
            raise NVMLError_InvalidArgument()
        return gpu.pcie_kbps(counter)

    def nvmlDeviceGetRemappedRows(self, device: Handle) -> tuple[int, int, int, int]:
        gpu = self._full("nvmlDeviceGetRemappedRows", device)
        if gpu.mig_enabled:
            raise NVMLError_NotSupported()
        return gpu.remapped_rows


def _nvlink_value(gpu: SimGpu, fv: c_nvmlFieldValue_t, direction: int, scope: int) -> None:
    """Fill an NVLink throughput field: one link's share, or every link's (UINT_MAX)."""
    if not gpu.nvlinks:
        fv.nvmlReturn = NVML_ERROR_NOT_SUPPORTED
        return
    if scope != NVML_VALUE_NOT_AVAILABLE_uint and not 0 <= scope < gpu.nvlinks:
        fv.nvmlReturn = NVML_ERROR_INVALID_ARGUMENT
        return
    total = gpu.nvlink_kib[direction]
    fv.valueType = _ULL
    fv.value.ullVal = int(total if scope == NVML_VALUE_NOT_AVAILABLE_uint else total / gpu.nvlinks)
