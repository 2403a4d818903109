"""The NVML calls of the emulator, one method per pynvml function, with pynvml's names.

Every method first calls `check(name, index)` (count the call, raise an injected fault,
Uninitialized before nvmlInit, advance the devices to the clock), then resolves the handle and
answers from the device state. Which calls a MIG instance handle or a MIG-enabled GPU refuses
follows NVML: utilization rates are NotSupported there, and the parent's aggregate memory needs
privileges (nvml.h, nvmlDeviceGetMemoryInfo: "In MIG mode, if device handle is provided, the API
returns aggregate information, only if the caller has appropriate privileges"), so an
unprivileged emulator answers NoPermission. Functions newer than the emulated driver raise
FunctionNotFound, as pynvml does for a symbol libnvidia-ml lacks (`_requires`; branches from the
nvml.h history in NVIDIA/go-nvml: `nvmlDeviceGetMemoryInfo_v2` in NVML 11.6 = R510,
`nvmlDeviceGetTemperatureV` in NVML 12.8 = R570). Field values fill the member of the
`c_nvmlValue_t` union that their `valueType` names, and only that one.
"""

from __future__ import annotations

from collections.abc import Callable

from exporter.sim.nvml.device import SimGpu, SimMigInstance
from exporter.sim.nvml.errors import (
    NVMLError_FunctionNotFound,
    NVMLError_InvalidArgument,
    NVMLError_NoPermission,
    NVMLError_NotFound,
    NVMLError_NotSupported,
)
from exporter.sim.nvml.structs import (
    SimDeviceHandle,
    SimMigHandle,
    c_nvmlDeviceAttributes,
    c_nvmlMemory_t,
    c_nvmlMemory_v2_t,
    c_nvmlUtilization_t,
    nvmlPciInfo_t,
)

Handle = SimDeviceHandle | SimMigHandle


class SimNvmlCalls:
    gpus: list[SimGpu]
    clock: Callable[[], float]
    driver_version: str
    privileged: bool
    initialized: int

    def check(self, call: str, index: int | None) -> None:
        raise NotImplementedError

    @property
    def driver_branch(self) -> int:
        """The driver's branch: 550 for "550.54.15"."""
        return int(self.driver_version.split(".", 1)[0])

    def _requires(self, branch: int) -> None:
        """FunctionNotFound unless the driver is of `branch` or newer (pynvml looks the symbol up
        before calling, so nothing is counted or faulted)."""
        if self.driver_branch < branch:
            raise NVMLError_FunctionNotFound()

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
        if version:
            self._requires(510)  # pynvml calls nvmlDeviceGetMemoryInfo_v2
        gpu = self._gpu("nvmlDeviceGetMemoryInfo", handle)
        if gpu.mig_enabled and not isinstance(handle, SimMigHandle) and not self.privileged:
            raise NVMLError_NoPermission()
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
