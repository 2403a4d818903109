"""pynvml's return structures and enum constants, as plain Python objects.

Each class has the attribute names of the pynvml ctypes structure it stands for (byte strings
where ctypes would give bytes, e.g. `nvmlPciInfo_t.busId`), so code that reads pynvml results
reads these unchanged. Constants carry pynvml's values. `c_nvmlValue_t` is a real ctypes union
with pynvml's members, so reading a member other than the one a field value's `valueType` names
gives the same reinterpreted bytes it gives on a real driver.
"""

from __future__ import annotations

import ctypes
from dataclasses import dataclass, field

NVML_TEMPERATURE_GPU = 0
NVML_CLOCK_GRAPHICS = 0
NVML_CLOCK_SM = 1
NVML_CLOCK_MEM = 2
NVML_FI_DEV_MEMORY_TEMP = 82
NVML_FI_DEV_NVLINK_THROUGHPUT_DATA_TX = 138  # KiB since the driver loaded; scopeId = link id
NVML_FI_DEV_NVLINK_THROUGHPUT_DATA_RX = 139  # (UINT_MAX: every link summed)
NVML_PCIE_UTIL_TX_BYTES = 0
NVML_PCIE_UTIL_RX_BYTES = 1
VALUE_MEMBERS = ("dVal", "uiVal", "ulVal", "ullVal", "sllVal", "siVal", "usVal")  # by valueType
nvmlTemperature_v1 = 0x100000C
NVML_VALUE_NOT_AVAILABLE_uint = 0xFFFFFFFF
nvmlMemory_v2 = 0x02000028
NVML_GPM_METRIC_GRAPHICS_UTIL = 1
NVML_GPM_METRIC_SM_UTIL = 2
NVML_GPM_METRIC_ANY_TENSOR_UTIL = 5
NVML_GPM_METRIC_DRAM_BW_UTIL = 10
NVML_GPM_METRIC_MAX = 477
NVML_GPM_METRICS_GET_VERSION = 1
nvmlEventTypeSingleBitEccError = 0x0000000000000001
nvmlEventTypeDoubleBitEccError = 0x0000000000000002
nvmlEventTypePState = 0x0000000000000004
nvmlEventTypeXidCriticalError = 0x0000000000000008
nvmlEventTypeClock = 0x0000000000000010


# The class names below are pynvml's.
@dataclass
class c_nvmlMemory_t:
    total: int = 0
    free: int = 0
    used: int = 0


@dataclass
class c_nvmlMemory_v2_t:
    version: int = 0
    total: int = 0
    reserved: int = 0
    free: int = 0
    used: int = 0


@dataclass
class c_nvmlUtilization_t:
    gpu: int = 0
    memory: int = 0


@dataclass
class nvmlPciInfo_t:
    busIdLegacy: bytes = b""
    domain: int = 0
    bus: int = 0
    device: int = 0
    pciDeviceId: int = 0
    pciSubSystemId: int = 0
    busId: bytes = b""


@dataclass
class c_nvmlProcessUtilizationSample_t:
    pid: int = 0
    timeStamp: int = 0
    smUtil: int = 0
    memUtil: int = 0
    encUtil: int = 0
    decUtil: int = 0


@dataclass
class c_nvmlProcessInfo_v3_t:
    pid: int = 0
    usedGpuMemory: int | None = 0
    gpuInstanceId: int = NVML_VALUE_NOT_AVAILABLE_uint
    computeInstanceId: int = NVML_VALUE_NOT_AVAILABLE_uint


class c_nvmlValue_t(ctypes.Union):
    _fields_ = [
        ("dVal", ctypes.c_double),
        ("uiVal", ctypes.c_uint),
        ("ulVal", ctypes.c_ulong),
        ("ullVal", ctypes.c_ulonglong),
        ("sllVal", ctypes.c_longlong),
        ("siVal", ctypes.c_int),
        ("usVal", ctypes.c_ushort),
    ]
    dVal: float
    uiVal: int
    ulVal: int
    ullVal: int
    sllVal: int
    siVal: int
    usVal: int


@dataclass
class c_nvmlFieldValue_t:
    fieldId: int = 0
    scopeId: int = 0
    timestamp: int = 0
    latencyUsec: int = 0
    valueType: int = 0
    nvmlReturn: int = 0
    value: c_nvmlValue_t = field(default_factory=c_nvmlValue_t)


@dataclass
class c_nvmlGpmSupport_t:
    version: int = 0
    isSupportedDevice: int = 0


@dataclass
class c_nvmlGpmSample_t:
    index: int = -1
    gpu_instance_id: int | None = None
    time_s: float = 0.0
    counters: tuple[float, float, float] = (0.0, 0.0, 0.0)
    filled: bool = False


@dataclass
class c_nvmlGpmMetric_t:
    metricId: int = 0
    nvmlReturn: int = 0
    value: float = 0.0


@dataclass
class c_nvmlGpmMetricsGet_t:
    version: int = 0
    numMetrics: int = 0
    sample1: c_nvmlGpmSample_t | None = None
    sample2: c_nvmlGpmSample_t | None = None
    metrics: list[c_nvmlGpmMetric_t] = field(
        default_factory=lambda: [c_nvmlGpmMetric_t() for _ in range(NVML_GPM_METRIC_MAX)]
    )


@dataclass
class c_nvmlDeviceAttributes:
    multiprocessorCount: int = 0
    gpuInstanceSliceCount: int = 0
    computeInstanceSliceCount: int = 0
    memorySizeMB: int = 0


@dataclass
class c_nvmlEventData_t:
    device: SimDeviceHandle | None = None
    eventType: int = 0
    eventData: int = 0  # the XID, for nvmlEventTypeXidCriticalError
    gpuInstanceId: int = NVML_VALUE_NOT_AVAILABLE_uint
    computeInstanceId: int = NVML_VALUE_NOT_AVAILABLE_uint


@dataclass(frozen=True)
class SimDeviceHandle:
    """What nvmlDeviceGetHandleByIndex returns (a c_nvmlDevice_t pointer in pynvml)."""

    index: int


@dataclass(frozen=True)
class SimMigHandle:
    index: int  # the parent GPU
    slot: int
