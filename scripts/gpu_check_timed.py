"""When gpu_check's energy readings were taken, measured around each NVML call.

The energy check compares the counter's change between two cycles with the mean power times the
time between the two counter reads. A snapshot's `taken_at` is stamped after its whole cycle
(attribution included), and a busy machine can hold the thread up anywhere in it, so the time of
the read is measured where the read happens: `TimedLib` wraps the NVML library object the
exporter's `NvmlSource` calls (the real `pynvml` module, or the emulator) and notes
`time.monotonic()` just before and just after each `nvmlDeviceGetTotalEnergyConsumption`, by the
GPU's UUID; every other name passes through untouched. The counter was read somewhere between
the two, however long the thread was held up on either side.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

ENERGY_CALL = "nvmlDeviceGetTotalEnergyConsumption"


@dataclass(frozen=True)
class ReadTime:
    """A read happened between `before` and `after` (seconds on the `TimedLib`'s clock)."""

    before: float
    after: float


class TimedLib:
    """An NVML library object that also notes when each energy counter read happened."""

    def __init__(self, lib: Any, clock: Callable[[], float] = time.monotonic) -> None:
        self._lib = lib
        self._clock = clock
        self._energy: dict[str, ReadTime] = {}

    def __getattr__(self, name: str) -> Any:
        return getattr(self._lib, name)

    def nvmlDeviceGetTotalEnergyConsumption(self, handle: Any) -> Any:
        before = self._clock()
        value = getattr(self._lib, ENERGY_CALL)(handle)  # an NVML error passes through, unnoted
        after = self._clock()
        try:
            uuid = self._lib.nvmlDeviceGetUUID(handle)
        except Exception:  # the reading stands; only its time goes unnoted
            return value
        key = uuid.decode() if isinstance(uuid, bytes) else str(uuid)
        self._energy[key] = ReadTime(before, after)
        return value

    def energy_reads(self) -> dict[str, ReadTime]:
        """The energy reads since the last call, by GPU UUID (a sweep reads each GPU once)."""
        out, self._energy = self._energy, {}
        return out
