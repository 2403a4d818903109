"""DCGM_FI_DEV_NVLINK_BANDWIDTH_TOTAL: NVLink traffic over every link of a GPU, as DCGM computes it.

NVML gives cumulative counters, not a rate: the field values `NVML_FI_DEV_NVLINK_THROUGHPUT_DATA_TX`
and `_RX` (KiB) with `scopeId` UINT_MAX, which nvml.h defines as "aggregate value summed up across
all links". DCGM (DcgmCacheManager, ReadAndCacheNvLinkBandwidth) adds TX and RX, and publishes the
difference from its previous reading divided by the seconds between the two field timestamps and
by 1000 (its comment: "KiB/sec -> MiB/sec"), 0 for a first reading or a zero sum. The reader does
the same, per GPU, once per sweep. A GPU without NVLink answers NotSupported in the fields'
`nvmlReturn`: it is not asked again and has no series; another per-field error fails the
"nvlink" collector on that GPU for the sweep.
"""

from __future__ import annotations

from typing import Any

from exporter.nvml.calls import NVML_ERROR_NOT_SUPPORTED, DeviceCalls
from exporter.nvml.readings import NvmlCollector, family, field_value

NVLINK_TOTAL = family("DCGM_FI_DEV_NVLINK_BANDWIDTH_TOTAL")
ALL_LINKS = 0xFFFFFFFF  # UINT_MAX
THROUGHPUT_DATA_TX, THROUGHPUT_DATA_RX = 138, 139  # nvml.h NVML_FI_DEV_NVLINK_THROUGHPUT_DATA_*
CALL, TAG = "nvmlDeviceGetFieldValues", "(NVLink)"


class NvlinkReader:
    """The previous (KiB, µs) reading of each GPU, keyed as its calls are."""

    def __init__(self) -> None:
        self._last: dict[object, tuple[float, int]] = {}

    def read(self, calls: DeviceCalls, handle: Any) -> dict[str, float]:
        fields = [(THROUGHPUT_DATA_TX, ALL_LINKS), (THROUGHPUT_DATA_RX, ALL_LINKS)]
        got = calls.call(NvmlCollector.NVLINK, CALL, handle, fields, tag=TAG)
        if not got.ok:
            return {}
        codes = [int(fv.nvmlReturn) for fv in got.value]
        if NVML_ERROR_NOT_SUPPORTED in codes:  # no NVLink on this GPU: never ask again
            calls.disabled[(calls.key, CALL + TAG)] = NVML_ERROR_NOT_SUPPORTED
            return {}
        values = [field_value(fv) for fv in got.value]
        if any(v is None for v in values):
            calls.fail(NvmlCollector.NVLINK)
            return {}
        total = sum(v for v in values if v is not None)
        stamp = max(int(fv.timestamp) for fv in got.value)
        previous = self._last.get(calls.key)
        self._last[calls.key] = (total, stamp)
        return {NVLINK_TOTAL: bandwidth(previous, total, stamp)}


def bandwidth(previous: tuple[float, int] | None, total: float, stamp_us: int) -> float:
    """Pure: DCGM's NVLink bandwidth from two cumulative KiB readings (0 without a previous one)."""
    if previous is None or total == 0 or stamp_us <= previous[1]:
        return 0.0
    return float(int((total - previous[0]) / ((stamp_us - previous[1]) / 1e6) / 1000.0))
