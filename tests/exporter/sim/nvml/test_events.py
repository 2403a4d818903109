"""The emulator's NVML event calls against pynvml's definitions and NVML's event semantics."""

from __future__ import annotations

import inspect
import re

import pytest
from exporter_fakes import pynvml_source

from exporter.sim.nvml import library as simnvml
from exporter.sim.nvml.device import SimGpu, h100

PYNVML_SOURCE = pynvml_source()
EVENT_CALLS = [
    "nvmlEventSetCreate",
    "nvmlDeviceRegisterEvents",
    "nvmlDeviceGetSupportedEventTypes",
    "nvmlEventSetWait_v2",
    "nvmlEventSetWait",
    "nvmlEventSetFree",
]
XID = simnvml.nvmlEventTypeXidCriticalError


def _lib(*gpus: SimGpu) -> simnvml.SimNvml:
    lib = simnvml.SimNvml(list(gpus), clock=lambda: 1_000.0)
    lib.nvmlInit()
    return lib


def _registered(lib: simnvml.SimNvml, *indices: int) -> object:
    event_set = lib.nvmlEventSetCreate()
    for i in indices:
        lib.nvmlDeviceRegisterEvents(lib.nvmlDeviceGetHandleByIndex(i), XID, event_set)
    return event_set


@pytest.mark.parametrize("call", EVENT_CALLS)
def test_event_calls_take_pynvml_parameters(call: str) -> None:
    match = re.search(rf"^def {call}\(([^)]*)\):", PYNVML_SOURCE.read_text(), re.M)
    assert match is not None
    theirs = [p.strip() for p in match[1].split(",") if p.strip()]
    ours = list(inspect.signature(getattr(simnvml.SimNvml, call)).parameters)[1:]
    assert ours == theirs


@pytest.mark.parametrize(
    "constant",
    ["nvmlEventTypeXidCriticalError", "nvmlEventTypePState", "nvmlEventTypeClock"],
)
def test_event_constants_match_pynvml(constant: str) -> None:
    match = re.search(rf"^{constant}\s*=\s*(0x[0-9A-Fa-f]+)", PYNVML_SOURCE.read_text(), re.M)
    assert match is not None and getattr(simnvml, constant) == int(match[1], 16)


def test_an_empty_set_times_out() -> None:
    lib = _lib(h100(0))
    event_set = _registered(lib, 0)
    for wait in (lib.nvmlEventSetWait_v2, lib.nvmlEventSetWait):
        with pytest.raises(simnvml.NVMLError_Timeout):
            wait(event_set, 0)


def test_events_queue_per_set_in_order_and_only_after_registration() -> None:
    lib = _lib(h100(0), h100(1))
    early = lib.nvmlEventSetCreate()
    assert lib.raise_xid(0, 13) == 0  # nobody registered: lost, as in NVML
    both, only_1 = _registered(lib, 0, 1), _registered(lib, 1)
    assert lib.raise_xid(0, 31) == 1
    assert lib.raise_xid(1, 43) == 2
    assert lib.raise_xid(1, 48) == 2
    got = [lib.nvmlEventSetWait_v2(both, 0) for _ in range(3)]
    h0, h1 = lib.nvmlDeviceGetHandleByIndex(0), lib.nvmlDeviceGetHandleByIndex(1)
    assert [(e.device, e.eventData) for e in got] == [(h0, 31), (h1, 43), (h1, 48)]
    assert all(e.eventType == XID and e.gpuInstanceId == 0xFFFFFFFF for e in got)
    assert lib.nvmlEventSetWait_v2(only_1, 0).eventData == 43
    assert lib.nvmlEventSetWait_v2(only_1, 0).eventData == 48
    for event_set in (both, only_1, early):
        with pytest.raises(simnvml.NVMLError_Timeout):
            lib.nvmlEventSetWait_v2(event_set, 1000)


def test_mig_events_name_the_gpu_instance() -> None:
    lib = _lib(h100(0, mig=True))
    event_set = _registered(lib, 0)
    lib.raise_xid(0, 43, gpu_instance_id=8)
    event = lib.nvmlEventSetWait_v2(event_set, 0)
    assert (event.device, event.gpuInstanceId, event.computeInstanceId) == (
        lib.nvmlDeviceGetHandleByIndex(0),
        8,
        0,
    )
    with pytest.raises(ValueError, match="no GPU instance 99"):
        lib.raise_xid(0, 43, gpu_instance_id=99)
    mig = lib.nvmlDeviceGetMigDeviceHandleByIndex(lib.nvmlDeviceGetHandleByIndex(0), 0)
    with pytest.raises(simnvml.NVMLError_NotSupported):
        lib.nvmlDeviceRegisterEvents(mig, XID, event_set)


def test_a_gpu_without_xid_events_refuses_the_registration() -> None:
    gpu = h100(0)
    gpu.xid_events_supported = False
    lib = _lib(gpu)
    handle = lib.nvmlDeviceGetHandleByIndex(0)
    supported = lib.nvmlDeviceGetSupportedEventTypes(handle)
    assert not supported & XID and supported & simnvml.nvmlEventTypePState
    event_set = lib.nvmlEventSetCreate()
    with pytest.raises(simnvml.NVMLError_NotSupported):
        lib.nvmlDeviceRegisterEvents(handle, XID, event_set)
    lib.nvmlDeviceRegisterEvents(handle, simnvml.nvmlEventTypePState, event_set)
    assert lib.raise_xid(0, 79) == 0


def test_freed_and_shut_down_sets_are_invalid() -> None:
    lib = _lib(h100(0))
    freed = _registered(lib, 0)
    lib.nvmlEventSetFree(freed)
    with pytest.raises(simnvml.NVMLError_InvalidArgument):
        lib.nvmlEventSetWait_v2(freed, 0)
    with pytest.raises(simnvml.NVMLError_InvalidArgument):
        lib.nvmlEventSetFree(freed)
    kept = _registered(lib, 0)
    lib.nvmlInit()  # nested init: the set survives the inner shutdown
    lib.nvmlShutdown()
    lib.raise_xid(0, 31)
    assert lib.nvmlEventSetWait_v2(kept, 0).eventData == 31
    lib.nvmlShutdown()
    assert lib.raise_xid(0, 31) == 0 and not lib.event_sets
    lib.nvmlInit()
    with pytest.raises(simnvml.NVMLError_InvalidArgument):
        lib.nvmlEventSetWait_v2(kept, 0)


def test_event_calls_before_init_raise_uninitialized() -> None:
    lib = simnvml.SimNvml([h100(0)], clock=lambda: 1_000.0)
    with pytest.raises(simnvml.NVMLError_Uninitialized):
        lib.nvmlEventSetCreate()


def test_an_injected_wait_fault_keeps_the_event_queued() -> None:
    lib = _lib(h100(0))
    event_set = _registered(lib, 0)
    lib.raise_xid(0, 62)
    lib.inject("nvmlEventSetWait_v2", simnvml.NVML_ERROR_UNKNOWN, times=1)
    with pytest.raises(simnvml.NVMLError_Unknown):
        lib.nvmlEventSetWait_v2(event_set, 0)
    assert lib.nvmlEventSetWait_v2(event_set, 0).eventData == 62
