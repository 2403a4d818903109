"""The device readings the NVML source takes, as data: which call, which collector, which dcgm-
exporter families it yields and how to convert NVML's units (bytes -> MiB, mW -> W).

PCIe throughput is read with `nvmlDeviceGetPcieThroughput` (KB/s over 20 ms, served in bytes per
second as dcgm-exporter does) and the remapped rows with `nvmlDeviceGetRemappedRows` (not asked
on a MIG-enabled GPU, where nvml.h says it is NotSupported). A reading may name a fallback, taken
on a device once the reading is disabled there: memory info v2 (R510+) falls back to v1; the GPU
temperature is read with `nvmlDeviceGetTemperatureV` (R570+; nvml.h deprecates
`nvmlDeviceGetTemperature` for it) and falls back to the deprecated call on older drivers, or
with a pynvml that predates it. Field values are read from the member of the `value` union their
`valueType` names (nvml.h: `nvmlFieldValue_t.valueType`, "Type of the value stored in value");
reading another member reinterprets the bytes.

Each reading names the families it yields, so that `--collectors` can leave out a call whose
every family is unchosen (`Reading.wanted`). The memory and utilization-rates readings are always
taken: the per-pod attribution needs them (per-pod memory, the `DCGM_FI_DEV_GPU_UTIL` scale).

Family names come from `gpu_contract` (`family` fails at import if a name is not in the
contract), so a renamed metric cannot silently drift.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from gpu_contract import BY_NAME


def family(name: str) -> str:
    """The contract's name for a dcgm-exporter family (KeyError if the contract lacks it)."""
    return BY_NAME[name].name


class NvmlCollector(StrEnum):
    IDENTITY = "identity"
    MEMORY = "memory"
    UTILIZATION = "utilization"
    POWER = "power"
    THERMAL = "thermal"
    CLOCKS = "clocks"
    PCIE = "pcie"
    NVLINK = "nvlink"
    ROW_REMAP = "row_remap"
    PROCESSES = "processes"
    PROFILING = "profiling"
    MIG = "mig"
    XID = "xid"


FB_FREE = family("DCGM_FI_DEV_FB_FREE")
FB_USED = family("DCGM_FI_DEV_FB_USED")
FB_RESERVED = family("DCGM_FI_DEV_FB_RESERVED")
GPU_UTIL = family("DCGM_FI_DEV_GPU_UTIL")
MEM_COPY_UTIL = family("DCGM_FI_DEV_MEM_COPY_UTIL")


@dataclass(frozen=True)
class Reading:
    collector: NvmlCollector
    call: str
    families: tuple[str, ...]  # what `parse` may yield
    parse: Callable[[Any], dict[str, float]]
    args: Callable[[Any], tuple[Any, ...]] = lambda _lib: ()
    tag: str = ""  # distinguishes two readings of the same call (clock types)
    whole_gpu_only: bool = False  # skipped on MIG-enabled GPUs (NVML refuses them there)
    fallback: Reading | None = None  # taken once this reading is disabled on a device
    attribution: bool = False  # the per-pod attribution needs it: taken whatever is chosen

    def wanted(self, chosen: frozenset[str] | None) -> bool:
        """Whether to take this reading when `chosen` families are served (None: all)."""
        return self.attribution or chosen is None or not chosen.isdisjoint(self.families)


def _memory(m: Any) -> dict[str, float]:
    values = {FB_FREE: float(m.free // (1 << 20)), FB_USED: float(m.used // (1 << 20))}
    if hasattr(m, "reserved"):  # v2; v1's `used` includes the reserved memory
        values[FB_RESERVED] = float(m.reserved // (1 << 20))
    return values


def _single(
    collector: NvmlCollector,
    call: str,
    name: str,
    *,
    scale: float = 1.0,
    first: bool = False,  # the value is the first of a tuple (encoder/decoder utilization)
    args: Callable[[Any], tuple[Any, ...]] = lambda _lib: (),
    tag: str = "",
    fallback: Reading | None = None,
) -> Reading:
    """A reading that yields one family, `name`, scaled by `scale`."""
    fam = family(name)

    def parse(v: Any) -> dict[str, float]:
        return {fam: float(v[0] if first else v) * scale}

    return Reading(collector, call, (fam,), parse, args, tag=tag, fallback=fallback)


# nvmlValueType_t -> the member of nvmlValue_t holding the value (nvml.h / pynvml.py)
VALUE_MEMBERS = ("dVal", "uiVal", "ulVal", "ullVal", "sllVal", "siVal", "usVal")


def field_value(fv: Any) -> float | None:
    """A field value's number, read by its valueType; None when NVML gave none."""
    if int(fv.nvmlReturn) != 0 or not 0 <= int(fv.valueType) < len(VALUE_MEMBERS):
        return None
    return float(getattr(fv.value, VALUE_MEMBERS[int(fv.valueType)]))


REMAPPED_ROWS = (
    family("DCGM_FI_DEV_CORRECTABLE_REMAPPED_ROWS"),
    family("DCGM_FI_DEV_UNCORRECTABLE_REMAPPED_ROWS"),
    family("DCGM_FI_DEV_ROW_REMAP_FAILURE"),
)
MEMORY_TEMP = family("DCGM_FI_DEV_MEMORY_TEMP")


def _remapped_rows(rows: Any) -> dict[str, float]:
    """pynvml's (corrRows, uncRows, isPending, failureOccurred); dcgm-exporter serves three."""
    corr, unc, _pending, failure = rows
    return dict(zip(REMAPPED_ROWS, (float(corr), float(unc), float(failure)), strict=True))


def _memory_temp(values: Any) -> dict[str, float]:
    value = field_value(values[0])
    return {} if value is None else {MEMORY_TEMP: value}


def _pcie_throughput(direction: str) -> Reading:
    """nvml.h: "throughput in KB/s" over a 20 ms window; dcgm-exporter serves bytes per second."""
    return _single(
        NvmlCollector.PCIE,
        "nvmlDeviceGetPcieThroughput",
        f"DCGM_FI_PROF_PCIE_{direction}_BYTES",
        scale=1024.0,
        args=lambda lib: (getattr(lib, f"NVML_PCIE_UTIL_{direction}_BYTES"),),
        tag=f"({direction})",
    )


FB = (FB_FREE, FB_USED, FB_RESERVED)
MEMORY_V1 = Reading(NvmlCollector.MEMORY, "nvmlDeviceGetMemoryInfo", FB, _memory, attribution=True)
MEMORY = Reading(  # drivers before R510 lack nvmlDeviceGetMemoryInfo_v2: fall back to v1
    NvmlCollector.MEMORY,
    "nvmlDeviceGetMemoryInfo",
    FB,
    _memory,
    lambda lib: (lib.nvmlMemory_v2,),
    tag="(v2)",
    fallback=MEMORY_V1,
    attribution=True,
)
_GPU_TEMP = "DCGM_FI_DEV_GPU_TEMP"


def _temperature_gpu(lib: Any) -> tuple[Any, ...]:
    return (lib.NVML_TEMPERATURE_GPU,)


READINGS: tuple[Reading, ...] = (
    MEMORY,
    Reading(
        NvmlCollector.UTILIZATION,
        "nvmlDeviceGetUtilizationRates",
        (GPU_UTIL, MEM_COPY_UTIL),
        lambda u: {GPU_UTIL: float(u.gpu), MEM_COPY_UTIL: float(u.memory)},
        whole_gpu_only=True,
        attribution=True,
    ),
    _single(
        NvmlCollector.UTILIZATION,
        "nvmlDeviceGetEncoderUtilization",
        "DCGM_FI_DEV_ENC_UTIL",
        first=True,
    ),
    _single(
        NvmlCollector.UTILIZATION,
        "nvmlDeviceGetDecoderUtilization",
        "DCGM_FI_DEV_DEC_UTIL",
        first=True,
    ),
    _single(NvmlCollector.POWER, "nvmlDeviceGetPowerUsage", "DCGM_FI_DEV_POWER_USAGE", scale=1e-3),
    _single(
        NvmlCollector.POWER,
        "nvmlDeviceGetTotalEnergyConsumption",
        "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION",
    ),
    _single(
        NvmlCollector.THERMAL,
        "nvmlDeviceGetTemperatureV",
        _GPU_TEMP,
        args=_temperature_gpu,
        fallback=_single(
            NvmlCollector.THERMAL, "nvmlDeviceGetTemperature", _GPU_TEMP, args=_temperature_gpu
        ),
    ),
    Reading(
        NvmlCollector.THERMAL,
        "nvmlDeviceGetFieldValues",
        (MEMORY_TEMP,),
        _memory_temp,
        lambda lib: ([lib.NVML_FI_DEV_MEMORY_TEMP],),
    ),
    _single(
        NvmlCollector.CLOCKS,
        "nvmlDeviceGetClockInfo",
        "DCGM_FI_DEV_SM_CLOCK",
        args=lambda lib: (lib.NVML_CLOCK_SM,),
        tag="(SM)",
    ),
    _single(
        NvmlCollector.CLOCKS,
        "nvmlDeviceGetClockInfo",
        "DCGM_FI_DEV_MEM_CLOCK",
        args=lambda lib: (lib.NVML_CLOCK_MEM,),
        tag="(MEM)",
    ),
    _single(
        NvmlCollector.PCIE,
        "nvmlDeviceGetPcieReplayCounter",
        "DCGM_FI_DEV_PCIE_REPLAY_COUNTER",
    ),
    *(_pcie_throughput(direction) for direction in ("TX", "RX")),
    # nvml.h: NotSupported "If MIG is enabled".
    Reading(
        NvmlCollector.ROW_REMAP,
        "nvmlDeviceGetRemappedRows",
        REMAPPED_ROWS,
        _remapped_rows,
        whole_gpu_only=True,
    ),
)
