"""One NVML call with the exporter's error semantics, for one device in one sweep.

`DeviceCalls.call` calls `lib.<name>(*args)` and classifies the outcome:
- a value;
- idle: NotFound, or the codes a call names in `idle_codes` (e.g. Timeout for an event wait):
  nothing to report, not a failure;
- disabled: NotSupported, FunctionNotFound (an older driver lacks the symbol; pynvml's
  unversioned wrappers report it as `NVMLLibraryMismatchError`, which has no `.value`; a pynvml
  too old to know the function has no attribute for it), or NoPermission (the DaemonSet drops the
  privileges some queries need, e.g. a MIG-enabled GPU's aggregate memory; those do not come back
  while the process runs). Remembered in the shared `disabled` map with its code, under the
  device's key, so the call is not made again for that device;
- failed: any other error; the collector is marked failed on this device and the error counted by
  call name. After GpuIsLost the device's remaining calls in the sweep are skipped and their
  collectors marked failed. Uninitialized, DriverNotLoaded and LibRmVersionMismatch mean NVML's
  state is gone (a driver reload or upgrade underneath): `restart` is raised for the whole sweep,
  the remaining calls are skipped, and the source re-initializes NVML afterwards.

The key is chosen by the source: the GPU's UUID and MIG mode (so a MIG toggle or another GPU in
the slot starts afresh), a MIG instance's UUID, or None for node-level calls.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

NVML_SUCCESS = 0
NVML_ERROR_UNINITIALIZED = 1
NVML_ERROR_NOT_SUPPORTED = 3
NVML_ERROR_NO_PERMISSION = 4
NVML_ERROR_NOT_FOUND = 6
NVML_ERROR_DRIVER_NOT_LOADED = 9
NVML_ERROR_TIMEOUT = 10
NVML_ERROR_FUNCTION_NOT_FOUND = 13  # an older driver: as permanent as NotSupported
NVML_ERROR_GPU_IS_LOST = 15
NVML_ERROR_LIB_RM_VERSION_MISMATCH = 18
DISABLING = (NVML_ERROR_NOT_SUPPORTED, NVML_ERROR_FUNCTION_NOT_FOUND, NVML_ERROR_NO_PERMISSION)
RESTARTING = (
    NVML_ERROR_UNINITIALIZED,
    NVML_ERROR_DRIVER_NOT_LOADED,
    NVML_ERROR_LIB_RM_VERSION_MISMATCH,
)


@dataclass(frozen=True)
class CallOutcome:
    value: Any = None
    ok: bool = False
    idle: bool = False  # NotFound (or an idle code)
    disabled: bool = False  # NotSupported / FunctionNotFound / NoPermission, now or before


_SKIPPED = CallOutcome()
_IDLE = CallOutcome(idle=True)
_DISABLED = CallOutcome(disabled=True)


def error_code(exc: BaseException) -> int | None:
    """The NVML return code an exception stands for (None: not an NVML error)."""
    code = getattr(exc, "value", None)
    if isinstance(code, int):
        return code
    if type(exc).__name__ == "NVMLLibraryMismatchError":  # pynvml: the _v3 symbol is missing
        return NVML_ERROR_FUNCTION_NOT_FOUND
    return None


@dataclass
class DeviceCalls:
    """The calls made on one device in one sweep."""

    lib: Any
    key: object
    disabled: dict[tuple[object, str], int]  # shared across sweeps: (key, call) -> code
    errors: dict[str, int]  # shared across the sweep's devices
    sweep_failed: set[str] = field(default_factory=set)  # collectors failed anywhere this sweep
    failed: set[str] = field(default_factory=set)  # collectors failed on this device
    lost: list[bool] = field(default_factory=lambda: [False])  # shared with child instances
    restart: list[bool] = field(default_factory=lambda: [False])  # shared by the whole sweep

    def child(self, key: object) -> DeviceCalls:
        """Calls for another device in the same sweep (a GPU's: `lost` is not shared)."""
        return DeviceCalls(
            self.lib, key, self.disabled, self.errors, self.sweep_failed, restart=self.restart
        )

    def instance(self, key: object) -> DeviceCalls:
        """Calls for a MIG instance of this GPU: own key and failures, the GPU's `lost`."""
        calls = self.child(key)
        calls.lost = self.lost
        return calls

    def is_disabled(self, name: str, tag: str = "") -> bool:
        return (self.key, name + tag) in self.disabled

    def denied(self, name: str, tag: str = "") -> bool:
        """Whether NVML answered NoPermission to this call on this device."""
        return self.disabled.get((self.key, name + tag)) == NVML_ERROR_NO_PERMISSION

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
            return _DISABLED
        if self.lost[0] or self.restart[0]:
            self.fail(collector)
            return _SKIPPED
        function = getattr(self.lib, name, None)
        if function is None:  # a pynvml that predates the function: as if the driver lacked it
            self.disabled[disable_key] = NVML_ERROR_FUNCTION_NOT_FOUND
            return _DISABLED
        try:
            return CallOutcome(function(*args), ok=True)
        except Exception as exc:  # NVMLError_*, or anything a broken binding raises
            code = error_code(exc)
            if code in idle_codes:
                return _IDLE
            if code in DISABLING:
                self.disabled[disable_key] = code
                return _DISABLED
            self.errors[name] = self.errors.get(name, 0) + 1
            self.fail(collector)
            if code in RESTARTING:
                self.restart[0] = True
            elif code == NVML_ERROR_GPU_IS_LOST and self.key is not None:
                self.lost[0] = True
            return _SKIPPED

    def fail(self, collector: str) -> None:
        """Mark `collector` failed on this device (and so in this sweep)."""
        self.failed.add(collector)
        self.sweep_failed.add(collector)
