"""The NVML calls of the emulator, one method per pynvml function, with pynvml's names.

Every method first calls `check(name, index)` (count the call, raise an injected fault,
Uninitialized before nvmlInit, advance the devices to the clock), then resolves the handle and
answers from the device state. Which calls a MIG instance handle or a MIG-enabled GPU refuses
follows NVML: utilization rates and process utilization are NotSupported there.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from exporter.simnvml_device import SimGpu, SimMigInstance
from exporter.simnvml_errors import (
    NVML_ERROR_NOT_SUPPORTED,
    NVMLError_FunctionNotFound,
    NVMLError_InvalidArgument,
    NVMLError_NotFound,
    NVMLError_NotSupported,
)
from exporter.simnvml_structs import (
    NVML_CLOCK_GRAPHICS,
    NVML_CLOCK_MEM,
    NVML_CLOCK_SM,
    NVML_FI_DEV_MEMORY_TEMP,
    NVML_TEMPERATURE_GPU,
    NVML_VALUE_TYPE_UNSIGNED_INT,
    SimDeviceHandle,
    SimMigHandle,
    c_nvmlDeviceAttributes,
    c_nvmlFieldValue_t,
    c_nvmlMemory_t,
    c_nvmlMemory_v2_t,
    c_nvmlProcessInfo_v3_t,
    c_nvmlProcessUtilizationSample_t,
    c_nvmlUtilization_t,
    nvmlPciInfo_t,
)

Handle = SimDeviceHandle | SimMigHandle


class SimNvmlCalls:
    gpus: list[SimGpu]
    clock: Callable[[], float]
    driver_version: str
    initialized: int

    def check(self, call: str, index: int | None) -> None:
        raise NotImplementedError

    # -- resolution ---------------------------------------------------------------------------
    def _gpu(self, call: str, handle: Handle) -> SimGpu:
        self.check(call, handle.index)
        if not 0 <= handle.index < len(self.gpus):
            raise NVMLError_InvalidArgument()
        return self.gpus[handle.index]

    def _full(self, call: str, handle: Handle) -> SimGpu:
        """Calls that only a physical GPU answers."""
        gpu = self._gpu(call, handle)
        if isinstance(handle, SimMigHandle):
            raise NVMLError_NotSupported()
        return gpu

    def _instance(self, gpu: SimGpu, handle: SimMigHandle) -> SimMigInstance:
        inst = gpu.mig[handle.slot] if gpu.mig and 0 <= handle.slot < len(gpu.mig) else None
        if inst is None:
            raise NVMLError_InvalidArgument()
        return inst

    # -- library ------------------------------------------------------------------------------
    def nvmlInit(self) -> None:
        self.check("nvmlInit", None)
        self.initialized += 1

    def nvmlInitWithFlags(self, flags: int) -> None:
        self.nvmlInit()

    def nvmlShutdown(self) -> None:
        self.check("nvmlShutdown", None)
        self.initialized = max(0, self.initialized - 1)

    def nvmlSystemGetDriverVersion(self) -> str:
        self.check("nvmlSystemGetDriverVersion", None)
        return self.driver_version

    def nvmlDeviceGetCount(self) -> int:
        self.check("nvmlDeviceGetCount", None)
        return len(self.gpus)

    def nvmlDeviceGetHandleByIndex(self, index: int) -> SimDeviceHandle:
        self.check("nvmlDeviceGetHandleByIndex", index)
        if not 0 <= index < len(self.gpus):
            raise NVMLError_InvalidArgument()
        return SimDeviceHandle(index)

    # -- identity -----------------------------------------------------------------------------
    def nvmlDeviceGetIndex(self, handle: Handle) -> int:
        return self._full("nvmlDeviceGetIndex", handle).index

    def nvmlDeviceGetUUID(self, handle: Handle) -> str:
        gpu = self._gpu("nvmlDeviceGetUUID", handle)
        if isinstance(handle, SimMigHandle):
            return self._instance(gpu, handle).uuid
        return gpu.uuid

    def nvmlDeviceGetName(self, handle: Handle) -> str:
        gpu = self._gpu("nvmlDeviceGetName", handle)
        if isinstance(handle, SimMigHandle):
            return f"{gpu.name} MIG {self._instance(gpu, handle).profile}"
        return gpu.name

    def nvmlDeviceGetPciInfo(self, handle: Handle) -> nvmlPciInfo_t:
        gpu = self._gpu("nvmlDeviceGetPciInfo", handle)
        bus = int(gpu.pci_bus_id.split(":")[1], 16)
        legacy = gpu.pci_bus_id[4:].encode()
        return nvmlPciInfo_t(legacy, 0, bus, 0, 0x233010DE, 0x16C110DE, gpu.pci_bus_id.encode())

    def nvmlDeviceGetMinorNumber(self, handle: Handle) -> int:
        return self._full("nvmlDeviceGetMinorNumber", handle).minor

    def nvmlDeviceGetAttributes(self, handle: Handle) -> c_nvmlDeviceAttributes:
        gpu = self._gpu("nvmlDeviceGetAttributes", handle)
        if isinstance(handle, SimMigHandle):
            inst = self._instance(gpu, handle)
            mb = inst.memory_total >> 20
            return c_nvmlDeviceAttributes(16 * inst.slices, inst.slices, inst.slices, mb)
        return c_nvmlDeviceAttributes(132, 7, 7, gpu.memory_total >> 20)

    # -- memory and activity ------------------------------------------------------------------
    def nvmlDeviceGetMemoryInfo(
        self, handle: Handle, version: int | None = None
    ) -> c_nvmlMemory_t | c_nvmlMemory_v2_t:
        gpu = self._gpu("nvmlDeviceGetMemoryInfo", handle)
        if version and not gpu.memory_info_v2_supported:
            raise NVMLError_FunctionNotFound()  # pynvml calls nvmlDeviceGetMemoryInfo_v2
        now = self.clock()
        if isinstance(handle, SimMigHandle):
            inst = self._instance(gpu, handle)
            total, reserved = inst.memory_total, 0
            used = gpu.memory_used(now, inst.gpu_instance_id)
        else:
            total, reserved, used = gpu.memory_total, gpu.memory_reserved, gpu.memory_used(now)
        used = min(used, total - reserved)
        if version:
            return c_nvmlMemory_v2_t(version, total, reserved, total - reserved - used, used)
        return c_nvmlMemory_t(total, total - reserved - used, used + reserved)

    def nvmlDeviceGetUtilizationRates(self, handle: Handle) -> c_nvmlUtilization_t:
        gpu = self._full("nvmlDeviceGetUtilizationRates", handle)
        if gpu.mig_enabled:
            raise NVMLError_NotSupported()
        sm, mem = gpu.last_util
        return c_nvmlUtilization_t(round(sm * 100), round(mem * 100))

    def nvmlDeviceGetEncoderUtilization(self, handle: Handle) -> list[int]:
        gpu = self._full("nvmlDeviceGetEncoderUtilization", handle)
        return [gpu.encoder_util, 167000]

    def nvmlDeviceGetDecoderUtilization(self, handle: Handle) -> list[int]:
        gpu = self._full("nvmlDeviceGetDecoderUtilization", handle)
        return [gpu.decoder_util, 167000]

    def nvmlDeviceGetProcessUtilization(
        self,
        handle: Handle,
        timeStamp: int,
    ) -> list[c_nvmlProcessUtilizationSample_t]:
        gpu = self._full("nvmlDeviceGetProcessUtilization", handle)
        if gpu.mig_enabled or not gpu.process_utilization_supported:
            raise NVMLError_NotSupported()
        out = [
            c_nvmlProcessUtilizationSample_t(s.pid, s.time_stamp_us, s.sm_util, s.mem_util, 0, 0)
            for s in gpu.samples
            if s.time_stamp_us > timeStamp
        ]
        if not out:
            raise NVMLError_NotFound()
        return out

    def nvmlDeviceGetComputeRunningProcesses(self, handle: Handle) -> list[c_nvmlProcessInfo_v3_t]:
        gpu = self._gpu("nvmlDeviceGetComputeRunningProcesses", handle)
        now = self.clock()
        gi = (
            self._instance(gpu, handle).gpu_instance_id
            if isinstance(handle, SimMigHandle)
            else None
        )
        out = []
        for p in gpu.live_processes(now, gi):
            info = c_nvmlProcessInfo_v3_t(p.pid, p.memory_bytes(now))
            if p.gpu_instance_id is not None:
                info.gpuInstanceId, info.computeInstanceId = p.gpu_instance_id, 0
            out.append(info)
        return out

    # -- sensors ------------------------------------------------------------------------------
    def nvmlDeviceGetTemperature(self, handle: Handle, sensor: int) -> int:
        gpu = self._full("nvmlDeviceGetTemperature", handle)
        if sensor != NVML_TEMPERATURE_GPU:
            raise NVMLError_InvalidArgument()
        return round(gpu.temperature_c)

    def nvmlDeviceGetFieldValues(
        self,
        handle: Handle,
        fieldIds: Sequence[int],
    ) -> list[c_nvmlFieldValue_t]:
        gpu = self._full("nvmlDeviceGetFieldValues", handle)
        out = []
        for field_id in fieldIds:
            fv = c_nvmlFieldValue_t(fieldId=field_id, valueType=NVML_VALUE_TYPE_UNSIGNED_INT)
            fv.timestamp = int(self.clock() * 1e6)
            if field_id == NVML_FI_DEV_MEMORY_TEMP and gpu.memory_temperature_supported:
                fv.value.uiVal = round(gpu.temperature_c) + 6
            else:
                fv.nvmlReturn = NVML_ERROR_NOT_SUPPORTED
            out.append(fv)
        return out

    def nvmlDeviceGetPowerUsage(self, handle: Handle) -> int:
        return round(self._full("nvmlDeviceGetPowerUsage", handle).power_watts() * 1000)

    def nvmlDeviceGetTotalEnergyConsumption(self, handle: Handle) -> int:
        return int(self._full("nvmlDeviceGetTotalEnergyConsumption", handle).energy_mj)

    def nvmlDeviceGetClockInfo(self, handle: Handle, type: int) -> int:
        gpu = self._full("nvmlDeviceGetClockInfo", handle)
        if type in (NVML_CLOCK_SM, NVML_CLOCK_GRAPHICS):
            return gpu.sm_clock_mhz()
        if type == NVML_CLOCK_MEM:
            return gpu.mem_clock_mhz
        raise NVMLError_InvalidArgument()

    def nvmlDeviceGetPcieReplayCounter(self, handle: Handle) -> int:
        return self._full("nvmlDeviceGetPcieReplayCounter", handle).pcie_replay_counter

    # -- MIG ----------------------------------------------------------------------------------
    def nvmlDeviceGetMigMode(self, handle: Handle) -> list[int]:
        mode = int(self._full("nvmlDeviceGetMigMode", handle).mig_enabled)
        return [mode, mode]

    def nvmlDeviceIsMigDeviceHandle(self, handle: Handle) -> bool:
        self._gpu("nvmlDeviceIsMigDeviceHandle", handle)
        return isinstance(handle, SimMigHandle)

    def nvmlDeviceGetMaxMigDeviceCount(self, handle: Handle) -> int:
        gpu = self._full("nvmlDeviceGetMaxMigDeviceCount", handle)
        return len(gpu.mig) if gpu.mig is not None else 0

    def nvmlDeviceGetMigDeviceHandleByIndex(self, handle: Handle, index: int) -> SimMigHandle:
        gpu = self._full("nvmlDeviceGetMigDeviceHandleByIndex", handle)
        if gpu.mig is None or not 0 <= index < len(gpu.mig):
            raise NVMLError_InvalidArgument()
        if gpu.mig[index] is None:
            raise NVMLError_NotFound()
        return SimMigHandle(gpu.index, index)

    def nvmlDeviceGetGpuInstanceId(self, handle: Handle) -> int:
        gpu = self._gpu("nvmlDeviceGetGpuInstanceId", handle)
        if not isinstance(handle, SimMigHandle):
            raise NVMLError_InvalidArgument()
        return self._instance(gpu, handle).gpu_instance_id

    def nvmlDeviceGetComputeInstanceId(self, handle: Handle) -> int:
        gpu = self._gpu("nvmlDeviceGetComputeInstanceId", handle)
        if not isinstance(handle, SimMigHandle):
            raise NVMLError_InvalidArgument()
        return self._instance(gpu, handle).compute_instance_id

    def nvmlDeviceGetDeviceHandleFromMigDeviceHandle(self, handle: Handle) -> SimDeviceHandle:
        self._gpu("nvmlDeviceGetDeviceHandleFromMigDeviceHandle", handle)
        if not isinstance(handle, SimMigHandle):
            raise NVMLError_InvalidArgument()
        return SimDeviceHandle(handle.index)
