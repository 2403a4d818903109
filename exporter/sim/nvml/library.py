"""An NVML emulator with pynvml's call surface, for the sim/replay backends and for tests.

`SimNvml` holds emulated GPUs (`exporter.sim.nvml.device.SimGpu`) and answers the pynvml calls the
exporter makes, with pynvml's names, argument order, return shapes (objects with the same
attribute names as pynvml's ctypes structures) and errors (`NVMLError_*` with `.value` codes).
NVML semantics reproduced: every call before `nvmlInit` raises Uninitialized; process
utilization answers one averaged row per busy process since `lastSeenTimeStamp` (µs), or one row
per busy sample period (`SimGpu.process_rows`: nvml.h reads both ways), with staggered
timestamps, stale PIDs and occasional junk, and NotFound when no process was busy
(`exporter.sim.nvml.sampling`, `exporter.sim.nvml.processes`); `nvmlDeviceGetUtilizationRates`
and process utilization raise NotSupported on MIG-enabled GPUs; MIG slots without an instance
raise NotFound; GPM is the way to per-instance activity; PCIe throughput, NVLink throughput
fields and remapped rows follow nvml.h (`exporter.sim.nvml.board`). `driver_version` decides which
functions exist (older drivers lack the `_v2`/`_v3`/`V` symbols). `privileged=False` is the
DaemonSet's view (no CAP_SYS_ADMIN): aggregate MIG-parent queries raise NoPermission and
per-instance XID events are not delivered. Events (`exporter.sim.nvml.events`): per-set queues,
Timeout when empty, and `raise_xid` to make the driver report an XID. `inject` makes any call
raise any error, for one device or all, once or forever; `inject_hang` makes it block, as a call
into a wedged driver does, until `release_hangs`.

This module can stand in for the `pynvml` module itself: its module-level attributes are the
constants and error classes, and any other name (`nvmlInit`, ...) resolves to the method of the
instance last passed to `install`. It never imports pynvml.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from exporter.sim.nvml.board import SimNvmlBoardCalls
from exporter.sim.nvml.device import SimGpu
from exporter.sim.nvml.errors import *  # noqa: F403 - re-exported as pynvml exports them
from exporter.sim.nvml.errors import NVMLError
from exporter.sim.nvml.events import SimEventSet, SimNvmlEventCalls
from exporter.sim.nvml.gpm import SimNvmlGpmCalls
from exporter.sim.nvml.processes import SimNvmlProcessCalls
from exporter.sim.nvml.structs import *  # noqa: F403


@dataclass
class Fault:
    """Raise `code` from `call` ("*" = every call) on device `index` (None = every device);
    `code` None: block until `release_hangs`, then raise GpuIsLost."""

    call: str
    code: int | None
    index: int | None = None
    remaining: int | None = None  # None = forever
    armed_at: float | None = None  # not before this emulator clock time


class SimNvml(SimNvmlProcessCalls, SimNvmlGpmCalls, SimNvmlEventCalls, SimNvmlBoardCalls):
    """An emulated NVML library: the GPUs, a clock, the init state and injected faults."""

    def __init__(
        self,
        gpus: Sequence[SimGpu],
        *,
        clock: Callable[[], float] = time.time,
        driver_version: str = "550.54.15",
        privileged: bool = True,
    ) -> None:
        self.gpus = list(gpus)
        self.clock = clock
        self.driver_version = driver_version
        self.privileged = privileged
        self.initialized = 0
        self._released = threading.Event()
        self._hang_lock = threading.Lock()
        self.hanging = 0  # calls blocked in an injected hang now (a caller waits in the driver)
        self.faults: list[Fault] = []
        self.calls: dict[str, int] = {}
        self.event_sets: list[SimEventSet] = []
        for gpu in self.gpus:  # the driver samples from the moment it is loaded
            gpu.advance(clock())

    def __getattr__(self, name: str) -> Any:
        """Constants, structures and error classes, so an instance works as a `lib` too."""
        try:
            return globals()[name]
        except KeyError:
            raise AttributeError(name) from None

    def inject(
        self,
        call: str,
        code: int,
        *,
        index: int | None = None,
        times: int | None = None,
        after: float | None = None,
    ) -> Fault:
        fault = Fault(call, code, index, times, after)
        self.faults.append(fault)
        return fault

    def inject_hang(
        self, call: str, *, index: int | None = None, after: float | None = None
    ) -> Fault:
        fault = Fault(call, None, index, armed_at=after)
        self.faults.append(fault)
        return fault

    def release_hangs(self) -> None:
        """Let every blocked call return (with GpuIsLost), and make new ones not block."""
        self._released.set()

    def clear_faults(self) -> None:
        self.faults.clear()

    def _hanging(self, step: int) -> None:
        with self._hang_lock:
            self.hanging += step

    def check(self, call: str, index: int | None) -> None:
        """Count the call and raise an injected fault or Uninitialized, as NVML would."""
        self.calls[call] = self.calls.get(call, 0) + 1
        for fault in self.faults:
            if fault.call not in (call, "*") or fault.index not in (None, index):
                continue
            if fault.armed_at is not None and self.clock() < fault.armed_at:
                continue
            if fault.remaining is not None:
                if fault.remaining <= 0:
                    continue
                fault.remaining -= 1
            if fault.code is None:
                self._hanging(+1)
                self._released.wait()
                self._hanging(-1)
                raise NVMLError(15)  # NVML_ERROR_GPU_IS_LOST: what a wedged GPU ends with
            raise NVMLError(fault.code)
        if call not in ("nvmlInit", "nvmlInitWithFlags") and not self.initialized:
            raise NVMLError(1)  # NVML_ERROR_UNINITIALIZED
        now = self.clock()
        for gpu in self.gpus:
            gpu.advance(now)


_installed: SimNvml | None = None


def install(lib: SimNvml | None) -> None:
    """Make this module's nvml* functions call `lib` (None: uninstall)."""
    global _installed  # noqa: PLW0603 - the module stands in for pynvml's module-level API
    _installed = lib


def __getattr__(name: str) -> Any:
    if name.startswith(("nvml", "Nvml")) and _installed is not None:
        return getattr(_installed, name)
    if name.startswith("nvml"):
        raise NVMLError(12)  # NVML_ERROR_LIBRARY_NOT_FOUND: nothing installed
    raise AttributeError(name)
