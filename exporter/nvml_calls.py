"""One NVML call with the exporter's error semantics, for one device in one sweep.

`DeviceCalls.call` calls `lib.<name>(*args)` and classifies the outcome: a value; idle
(NotFound, or the codes a call names in `idle_codes`, e.g. Timeout for an event wait: nothing to
report, not a failure); disabled (NotSupported, or FunctionNotFound from
an older driver: remembered in the shared `disabled` set so the call is never made again for
that device); or failed (any other error: the collector is marked failed for this device and
the error counted by call name). After GpuIsLost the device's remaining calls in the sweep are
skipped and their collectors marked failed.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

NVML_ERROR_NOT_SUPPORTED = 3
NVML_ERROR_NOT_FOUND = 6
NVML_ERROR_TIMEOUT = 10
NVML_ERROR_FUNCTION_NOT_FOUND = 13  # an older driver: as permanent as NotSupported
NVML_ERROR_GPU_IS_LOST = 15


@dataclass(frozen=True)
class CallOutcome:
    value: Any = None
    ok: bool = False
    idle: bool = False  # NotFound


_SKIPPED = CallOutcome()
_IDLE = CallOutcome(idle=True)


@dataclass
class DeviceCalls:
    """The calls made on one device (`key`: GPU index, or (index, slot) for a MIG instance)."""

    lib: Any
    key: object
    disabled: set[tuple[object, str]]  # shared across sweeps
    errors: dict[str, int]  # shared across the sweep's devices
    sweep_failed: set[str] = field(default_factory=set)  # collectors failed anywhere this sweep
    failed: set[str] = field(default_factory=set)  # collectors failed on this device
    lost: list[bool] = field(default_factory=lambda: [False])  # shared with child instances

    def child(self, key: object) -> DeviceCalls:
        """Calls for a MIG instance of this GPU: own key and failures, same sweep."""
        return DeviceCalls(
            self.lib, key, self.disabled, self.errors, self.sweep_failed, lost=self.lost
        )

    def is_disabled(self, name: str, tag: str = "") -> bool:
        return (self.key, name + tag) in self.disabled

    def call(
        self,
        collector: str,
        name: str,
        *args: Any,
        tag: str = "",
        idle_codes: tuple[int, ...] = (NVML_ERROR_NOT_FOUND,),
    ) -> CallOutcome:
        disable_key = (self.key, name + tag)
        if disable_key in self.disabled:
            return _SKIPPED
        if self.lost[0]:
            self.fail(collector)
            return _SKIPPED
        try:
            return CallOutcome(getattr(self.lib, name)(*args), ok=True)
        except Exception as exc:  # NVMLError_*, or anything a broken binding raises
            code = getattr(exc, "value", None)
            if code in idle_codes:
                return _IDLE
            if code in (NVML_ERROR_NOT_SUPPORTED, NVML_ERROR_FUNCTION_NOT_FOUND):
                self.disabled.add(disable_key)
                return _SKIPPED
            self.errors[name] = self.errors.get(name, 0) + 1
            self.fail(collector)
            if code == NVML_ERROR_GPU_IS_LOST and self.key is not None:
                self.lost[0] = True
            return _SKIPPED

    def fail(self, collector: str) -> None:
        """Mark `collector` failed on this device (and so in this sweep)."""
        self.failed.add(collector)
        self.sweep_failed.add(collector)
