"""The emulator's NVML event calls, and the hook that raises an XID on an emulated device.

NVML semantics reproduced: `nvmlEventSetCreate` returns a new, empty event set, valid until it
is freed or the library is shut down (the last `nvmlShutdown` frees every set, so a set belongs
to one init). `nvmlDeviceGetSupportedEventTypes` gives a GPU's event mask; registering a type
outside it raises NotSupported, and so does registering on a MIG instance handle (events are
registered on the physical GPU and name the GPU instance in the event data). An event reaches
every live set that registered its type on its device, after the registration (events are not
buffered before it); each set queues its events in order. `nvmlEventSetWait_v2` returns the
oldest queued event or raises Timeout when none is queued. The emulator never sleeps: with an
empty queue it raises Timeout at once, whatever the timeout (the clock is injected). Using a
freed or foreign set raises InvalidArgument.

`raise_xid(index, xid, gpu_instance_id=None)` is not an NVML call (not counted, no faults): it
is the driver reporting an XID on GPU `index` (or on one of its MIG GPU instances). An
unprivileged emulator does not deliver per-instance events (nvml.h, nvmlEventSetWait_v2: "In MIG
mode, if device handle is provided, the API reports all the events for the available instances,
only if the caller has appropriate privileges. In absence of required privileges, only the events
which affect all the instances (i.e. whole device) are reported.").
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field

from exporter.sim.nvml.api import Handle, SimNvmlCalls
from exporter.sim.nvml.device import SimGpu
from exporter.sim.nvml.errors import (
    NVMLError_InvalidArgument,
    NVMLError_NotSupported,
    NVMLError_Timeout,
)
from exporter.sim.nvml.structs import (
    NVML_VALUE_NOT_AVAILABLE_uint,
    SimDeviceHandle,
    c_nvmlEventData_t,
    nvmlEventTypeClock,
    nvmlEventTypeDoubleBitEccError,
    nvmlEventTypePState,
    nvmlEventTypeSingleBitEccError,
    nvmlEventTypeXidCriticalError,
)

_BASE_EVENT_TYPES = (
    nvmlEventTypeSingleBitEccError
    | nvmlEventTypeDoubleBitEccError
    | nvmlEventTypePState
    | nvmlEventTypeClock
)


@dataclass(eq=False)
class SimEventSet:
    """What nvmlEventSetCreate returns (a c_nvmlEventSet_t pointer in pynvml)."""

    registered: dict[int, int] = field(default_factory=dict)  # GPU index -> event type mask
    queue: deque[c_nvmlEventData_t] = field(default_factory=deque)
    freed: bool = False


def supported_event_types(gpu: SimGpu) -> int:
    return _BASE_EVENT_TYPES | (nvmlEventTypeXidCriticalError if gpu.xid_events_supported else 0)


class SimNvmlEventCalls(SimNvmlCalls):
    event_sets: list[SimEventSet]  # the live sets; set by SimNvml

    def _live(self, event_set: object) -> SimEventSet:
        if not isinstance(event_set, SimEventSet) or event_set not in self.event_sets:
            raise NVMLError_InvalidArgument()
        return event_set

    def nvmlShutdown(self) -> None:
        super().nvmlShutdown()
        if not self.initialized:
            for event_set in self.event_sets:
                event_set.freed = True
            self.event_sets.clear()

    # -- events -------------------------------------------------------------------------------
    def nvmlEventSetCreate(self) -> SimEventSet:
        self.check("nvmlEventSetCreate", None)
        event_set = SimEventSet()
        self.event_sets.append(event_set)
        return event_set

    def nvmlDeviceGetSupportedEventTypes(self, handle: Handle) -> int:
        return supported_event_types(self._full("nvmlDeviceGetSupportedEventTypes", handle))

    def nvmlDeviceRegisterEvents(self, handle: Handle, eventTypes: int, eventSet: object) -> None:
        gpu = self._full("nvmlDeviceRegisterEvents", handle)
        live = self._live(eventSet)
        if eventTypes & ~supported_event_types(gpu):
            raise NVMLError_NotSupported()
        live.registered[gpu.index] = live.registered.get(gpu.index, 0) | eventTypes

    def nvmlEventSetWait_v2(self, eventSet: object, timeoutms: int) -> c_nvmlEventData_t:
        self.check("nvmlEventSetWait_v2", None)
        return self._next_event(eventSet)

    def nvmlEventSetWait(self, eventSet: object, timeoutms: int) -> c_nvmlEventData_t:
        self.check("nvmlEventSetWait", None)
        return self._next_event(eventSet)

    def _next_event(self, event_set: object) -> c_nvmlEventData_t:
        live = self._live(event_set)
        if not live.queue:
            raise NVMLError_Timeout()
        return live.queue.popleft()

    def nvmlEventSetFree(self, eventSet: object) -> None:
        self.check("nvmlEventSetFree", None)
        live = self._live(eventSet)
        live.freed = True
        self.event_sets.remove(live)

    # -- the driver's side --------------------------------------------------------------------
    def raise_xid(self, index: int, xid: int, gpu_instance_id: int | None = None) -> int:
        """Report XID `xid` on GPU `index` (on one GPU instance of it when given).

        Returns how many event sets received it (0: nobody had registered for XIDs there).
        """
        if not 0 <= index < len(self.gpus):
            raise ValueError(f"no GPU {index}")
        gpu = self.gpus[index]
        gi = ci = NVML_VALUE_NOT_AVAILABLE_uint
        if gpu_instance_id is not None:
            inst = gpu.instance(gpu_instance_id)
            if inst is None:
                raise ValueError(f"GPU {index} has no GPU instance {gpu_instance_id}")
            gi, ci = inst.gpu_instance_id, inst.compute_instance_id
            if not self.privileged:
                return 0
        delivered = 0
        for event_set in self.event_sets:
            if event_set.registered.get(index, 0) & nvmlEventTypeXidCriticalError:
                event = c_nvmlEventData_t(
                    SimDeviceHandle(index), nvmlEventTypeXidCriticalError, xid, gi, ci
                )
                event_set.queue.append(event)
                delivered += 1
        return delivered
