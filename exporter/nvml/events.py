"""The last XID error of each GPU and MIG instance (DCGM_FI_DEV_XID_ERRORS), from NVML events.

NVML reports XIDs as events, not as a value to read: the source creates one event set per
init (`nvmlEventSetCreate`), registers XidCriticalError on each GPU whose
`nvmlDeviceGetSupportedEventTypes` includes it (`nvmlDeviceRegisterEvents`), and at the start of
every sweep drains the set with zero-timeout waits (`nvmlEventSetWait_v2`; Timeout means "no
more events", not a failure). Like dcgm-exporter the gauge is the value of the last XID seen on
the device, 0 until one is seen; `counts` gives every XID seen, by value, for the
`gpu_xid_errors_total` counter (the alerts read it: the gauge cannot tell a repeated XID).

An event names its GPU by handle: mapped back to the index it was registered under (by pointer
address for pynvml's ctypes handles, by value for the emulator's), else by `nvmlDeviceGetIndex`.
An event whose gpuInstanceId names a GPU instance belongs to that MIG instance; otherwise to the
GPU. A GPU without MIG shows its last XID whatever the event's instance id says.

Error semantics (collector "xid"): a GPU that lacks XID events (mask without the bit,
NotSupported) publishes 0 and is never asked again. Any other error while registering marks
"xid" failed on that GPU, omits its value and retries next sweep; a failed wait marks "xid"
failed on every registered GPU for the sweep (the set is not told which GPU failed), and their
last values come back once a drain succeeds. Errors are counted by call, never fail the sweep.
"""

from __future__ import annotations

import contextlib
import ctypes
from typing import Any

from exporter.nvml.calls import NVML_ERROR_TIMEOUT, DeviceCalls
from exporter.nvml.readings import NvmlCollector, family

XID_ERRORS = family("DCGM_FI_DEV_XID_ERRORS")
XID_EVENT = 0x0000000000000008  # nvmlEventTypeXidCriticalError
NOT_AVAILABLE = 0xFFFFFFFF  # NVML_VALUE_NOT_AVAILABLE as an unsigned int
MAX_EVENTS_PER_SWEEP = 10_000  # an event storm cannot stall the sweep


def handle_key(handle: Any) -> object:
    """A hashable identity of a device handle: pynvml's pointers compare by object, not address."""
    try:
        return ("ptr", ctypes.cast(handle, ctypes.c_void_p).value)
    except (TypeError, ctypes.ArgumentError):
        return handle


class XidReader:
    """The event set, the registered GPUs and the last XID of each GPU / GPU instance."""

    def __init__(self) -> None:
        self._reset()

    def _reset(self) -> None:
        self._set: Any = None
        self._unavailable = False  # NVML has no event sets (NotSupported / FunctionNotFound)
        self._registered: set[int] = set()
        self._unsupported: set[int] = set()
        self._by_handle: dict[object, int] = {}
        self._last: dict[int, dict[int | None, tuple[int, int]]] = {}  # gi -> (order, xid)
        self._counts: dict[int, dict[int | None, dict[int, int]]] = {}  # gi -> xid -> events
        self._order = 0
        self._drain_failed = False

    def close(self, lib: Any) -> None:
        """Free the event set (before nvmlShutdown); the next init starts afresh."""
        if self._set is not None:
            with contextlib.suppress(Exception):
                lib.nvmlEventSetFree(self._set)
        self._reset()

    def drain(self, node: DeviceCalls) -> None:
        """Once per sweep, before the GPUs: create the set if needed, take every queued event."""
        self._drain_failed = False
        if self._set is None:
            created = node.call(NvmlCollector.XID, "nvmlEventSetCreate")
            self._set = created.value if created.ok else None
            self._unavailable = node.is_disabled("nvmlEventSetCreate")
            return  # nothing can be queued before registration
        for _ in range(MAX_EVENTS_PER_SWEEP):
            got = node.call(
                NvmlCollector.XID,
                "nvmlEventSetWait_v2",
                self._set,
                0,
                idle_codes=(NVML_ERROR_TIMEOUT,),
            )
            if not got.ok:
                self._drain_failed = not got.idle and not node.is_disabled("nvmlEventSetWait_v2")
                return
            self._record(node, got.value)

    def _record(self, node: DeviceCalls, event: Any) -> None:
        if not int(event.eventType) & XID_EVENT:
            return
        index = self._by_handle.get(handle_key(event.device))
        if index is None:
            found = node.call(NvmlCollector.XID, "nvmlDeviceGetIndex", event.device)
            if not found.ok:
                return
            index = int(found.value)
        gi: int | None = int(event.gpuInstanceId)
        if gi == NOT_AVAILABLE:
            gi = None
        self._order += 1
        xid = int(event.eventData)
        self._last.setdefault(index, {})[gi] = (self._order, xid)
        counts = self._counts.setdefault(index, {}).setdefault(gi, {})
        counts[xid] = counts.get(xid, 0) + 1

    def counts(self, index: int, gi: int | None, mig_enabled: bool) -> dict[int, int]:
        """XID -> events seen on a GPU (gi None) or one of its MIG instances, since init. A GPU
        without MIG counts every event of the GPU, whatever its instance id says."""
        by_gi = self._counts.get(index, {})
        if gi is not None or mig_enabled:
            return dict(by_gi.get(gi, {}))
        out: dict[int, int] = {}
        for counts in by_gi.values():
            for xid, n in counts.items():
                out[xid] = out.get(xid, 0) + n
        return out

    def gpu_values(
        self, calls: DeviceCalls, index: int, handle: Any, mig_enabled: bool
    ) -> dict[str, float]:
        """The GPU's last XID (0 if none), after registering it if it is not yet."""
        if not self._ready(calls, index, handle):
            return {}
        by_gi = self._last.get(index, {})
        # Without MIG the GPU's last XID is the last event, whatever its instance id says.
        last = by_gi.get(None) if mig_enabled else max(by_gi.values(), default=None)
        return self._value(calls, index, last)

    def instance_values(self, calls: DeviceCalls, index: int, gi: int) -> dict[str, float]:
        """A MIG instance's last XID (0 if none); the parent GPU registered it, or not."""
        if index not in self._registered and index not in self._unsupported:
            calls.fail(NvmlCollector.XID)
            return {}
        return self._value(calls, index, self._last.get(index, {}).get(gi))

    def _value(
        self, calls: DeviceCalls, index: int, last: tuple[int, int] | None
    ) -> dict[str, float]:
        if self._drain_failed and index in self._registered:
            calls.fail(NvmlCollector.XID)
            return {}
        return {XID_ERRORS: float(last[1]) if last is not None else 0.0}

    def _ready(self, calls: DeviceCalls, index: int, handle: Any) -> bool:
        """True once the GPU is registered or known to lack XID events."""
        if index in self._registered or index in self._unsupported:
            return True
        if self._set is None:  # creation failed this sweep (retried next), or is unsupported
            if not self._unavailable:
                calls.fail(NvmlCollector.XID)
            return self._lacks_events(index, self._unavailable)
        types = calls.call(NvmlCollector.XID, "nvmlDeviceGetSupportedEventTypes", handle)
        if not types.ok:
            return self._lacks_events(index, calls.is_disabled("nvmlDeviceGetSupportedEventTypes"))
        if not int(types.value) & XID_EVENT:
            return self._lacks_events(index, True)
        reg = calls.call(
            NvmlCollector.XID, "nvmlDeviceRegisterEvents", handle, XID_EVENT, self._set
        )
        if reg.ok:
            self._registered.add(index)
            self._by_handle[handle_key(handle)] = index
            return True
        return self._lacks_events(index, calls.is_disabled("nvmlDeviceRegisterEvents"))

    def _lacks_events(self, index: int, lacks: bool) -> bool:
        if lacks:
            self._unsupported.add(index)
        return lacks
