"""DCGM_FI_DEV_XID_ERRORS from NVML events, through the emulator: last value per device, MIG,
devices without XID events, and failures contained to the collector "xid" of one device."""

from __future__ import annotations

import ctypes
from collections.abc import Callable

import pytest
from exporter_fakes import EmulatedNode

from exporter.model import DeviceReading, NodeSnapshot
from exporter.nvml.events import handle_key
from exporter.nvml.readings import NvmlCollector
from exporter.render import exposition_text
from exporter.sim.nvml import library as simnvml
from exporter.sim.nvml.device import h100
from exporter.sources import DeviceSweep

XID = "DCGM_FI_DEV_XID_ERRORS"
FAILURE_CODES = sorted(
    (name, code)
    for name, code in vars(simnvml).items()
    if name.startswith("NVML_ERROR_") and code not in (0, 1, 3, 4, 6, 9, 13, 18)
)
# Timeout from a wait is "no event": every drain ends with one, and it is no failure.
WAIT_FAILURE_CODES = [(n, c) for n, c in FAILURE_CODES if c != simnvml.NVML_ERROR_TIMEOUT]


class Node(EmulatedNode):
    def xids(self, sweep: DeviceSweep) -> dict[object, float | None]:
        return {_key(d): d.values.get(XID) for d in sweep.devices}


def _key(d: DeviceReading) -> object:
    return d.index if d.mig is None else (d.index, d.mig.gpu_instance_id)


# (name, XIDs raised between sweeps as [(gpu, xid)], expected last XID of GPUs 0..2 per sweep)
HISTORIES = [
    pytest.param(
        [[], [(1, 79)], [], []], [[0, 0, 0], [0, 79, 0], [0, 79, 0], [0, 79, 0]], id="one"
    ),
    pytest.param(
        [[(2, 13), (2, 31), (2, 48)], [], [(2, 43)]],
        [[0, 0, 48], [0, 0, 48], [0, 0, 43]],
        id="last-of-several-wins",
    ),
    pytest.param(
        [[(0, 62)], [(1, 31)], [(0, 45)]],
        [[62, 0, 0], [62, 31, 0], [45, 31, 0]],
        id="each-gpu-its-own",
    ),
]


@pytest.mark.parametrize(("raised", "expected"), HISTORIES)
def test_an_xid_shows_on_its_gpu_only_and_persists(
    raised: list[list[tuple[int, int]]], expected: list[list[int]]
) -> None:
    node = Node([h100(i) for i in range(3)])
    assert node.xids(node.sweep()) == {0: 0, 1: 0, 2: 0}  # registered in the first sweep
    for xids, want in zip(raised, expected, strict=True):
        for gpu, xid in xids:
            node.lib.raise_xid(gpu, xid)
        sweep = node.sweep()
        assert node.xids(sweep) == dict(enumerate(want))
        assert all(sweep.collector_success.values()) and not sweep.errors


def test_mig_xids_go_to_their_instance_or_to_the_gpu() -> None:
    node = Node([h100(0, mig=True), h100(1)])
    node.sweep()
    node.lib.raise_xid(0, 43, gpu_instance_id=8)
    node.lib.raise_xid(1, 31)
    xids = node.xids(node.sweep())
    assert xids[(0, 8)] == 43 and xids[1] == 31
    assert all(v == 0 for k, v in xids.items() if k not in ((0, 8), 1)) and len(xids) == 9
    node.lib.raise_xid(0, 79)  # the whole GPU: the parent's series, instances keep theirs
    xids = node.xids(node.sweep())
    assert (xids[0], xids[(0, 8)], xids[(0, 9)]) == (79, 43, 0)


def test_after_mig_is_disabled_the_gpu_shows_its_last_xid_whatever_its_instance() -> None:
    gpu = h100(0, mig=True)
    node = Node([gpu])
    node.sweep()
    node.lib.raise_xid(0, 43, gpu_instance_id=8)
    assert node.xids(node.sweep())[0] == 0  # MIG on: an instance's XID is the instance's
    gpu.mig = None  # MIG disabled (a GPU reset in between, as on a real node)
    assert node.xids(node.sweep()) == {0: 43}


def _no_xid_bit(node: Node) -> None:
    node.lib.gpus[1].xid_events_supported = False


# Ways a device (or NVML) lacks XID events; each leaves GPU 1 at 0 without any failure.
UNSUPPORTED = [
    pytest.param(_no_xid_bit, "nvmlDeviceGetSupportedEventTypes", id="mask-without-xid"),
    pytest.param(
        lambda n: n.lib.inject("nvmlDeviceGetSupportedEventTypes", 3, index=1),
        "nvmlDeviceGetSupportedEventTypes",
        id="supported-types-not-supported",
    ),
    pytest.param(
        lambda n: n.lib.inject("nvmlDeviceRegisterEvents", 3, index=1),
        "nvmlDeviceRegisterEvents",
        id="register-not-supported",
    ),
    pytest.param(
        lambda n: n.lib.inject("nvmlEventSetCreate", 13),
        "nvmlEventSetCreate",
        id="old-driver-without-event-sets",
    ),
]


@pytest.mark.parametrize(("setup", "call"), UNSUPPORTED)
def test_devices_without_xid_events_publish_zero_without_failing(
    setup: Callable[[Node], object], call: str
) -> None:
    node = Node([h100(0), h100(1)])
    setup(node)
    sweeps = [node.sweep()]
    asked = node.lib.calls[call]
    sweeps.append(node.sweep())
    node.lib.raise_xid(1, 79)  # lost: GPU 1 is not registered
    sweeps += [node.sweep() for _ in range(2)]
    assert all(all(s.collector_success.values()) and not s.errors for s in sweeps)
    assert all(node.xids(s)[1] == 0 for s in sweeps)
    assert node.lib.calls[call] == asked  # asked once, never again


@pytest.mark.parametrize("call", ["nvmlDeviceGetSupportedEventTypes", "nvmlDeviceRegisterEvents"])
@pytest.mark.parametrize(("error", "code"), FAILURE_CODES, ids=[n for n, _ in FAILURE_CODES])
def test_a_registration_error_fails_xid_on_that_device_only(
    call: str, error: str, code: int
) -> None:
    node = Node([h100(0), h100(1)])
    node.lib.inject(call, code, index=1)
    node.sweep()
    node.lib.raise_xid(0, 31)
    sweep = node.sweep()
    dev0, dev1 = sweep.devices
    assert dev0.values[XID] == 31 and not dev0.failed
    assert NvmlCollector.XID in dev1.failed and XID not in dev1.values
    assert sweep.collector_success[NvmlCollector.XID] is False and sweep.errors[call] == 1
    if code != simnvml.NVML_ERROR_GPU_IS_LOST:  # (a lost GPU skips its remaining calls)
        assert dev1.failed == {NvmlCollector.XID} and "DCGM_FI_DEV_FB_USED" in dev1.values
        assert all(ok for c, ok in sweep.collector_success.items() if c != NvmlCollector.XID)
    node.lib.clear_faults()
    node.sweep()  # registers GPU 1 now
    node.lib.raise_xid(1, 48)
    recovered = node.sweep()
    assert node.xids(recovered) == {0: 31, 1: 48}
    assert all(recovered.collector_success.values())


@pytest.mark.parametrize(
    ("error", "code"), WAIT_FAILURE_CODES, ids=[n for n, _ in WAIT_FAILURE_CODES]
)
def test_a_failed_wait_fails_xid_for_the_sweep_and_loses_nothing(error: str, code: int) -> None:
    node = Node([h100(0), h100(1)])
    node.sweep()
    node.lib.raise_xid(0, 62)
    node.lib.inject("nvmlEventSetWait_v2", code, times=1)
    failed = node.sweep()
    assert all(NvmlCollector.XID in d.failed and XID not in d.values for d in failed.devices)
    assert all("DCGM_FI_DEV_FB_USED" in d.values for d in failed.devices)
    assert [c for c, ok in failed.collector_success.items() if not ok] == [NvmlCollector.XID]
    assert failed.errors == {"nvmlEventSetWait_v2": 1}
    recovered = node.sweep()
    assert node.xids(recovered) == {0: 62, 1: 0} and all(recovered.collector_success.values())


def test_close_frees_the_event_set_and_a_new_init_starts_afresh() -> None:
    node = Node([h100(0)])
    node.sweep()
    node.lib.raise_xid(0, 79)
    assert node.xids(node.sweep()) == {0: 79}
    node.source.close()
    assert node.lib.calls["nvmlEventSetFree"] == 1 and not node.lib.event_sets
    assert node.xids(node.sweep()) == {0: 0}
    node.lib.raise_xid(0, 13)
    assert node.xids(node.sweep()) == {0: 13} and node.lib.calls["nvmlEventSetCreate"] == 2


def test_the_rendered_gauge_names_the_gpu() -> None:
    node = Node([h100(0), h100(1)])
    node.sweep()
    node.lib.raise_xid(1, 79)
    devices = node.sweep().devices
    text = exposition_text(NodeSnapshot("n", 0.0, 0.0, devices, (), {}, {}))
    lines = sorted(line for line in text.splitlines() if line.startswith(XID + "{"))
    assert [(('gpu="1"' in line), line.rsplit(" ", 1)[1]) for line in lines] == [
        (False, "0"),
        (True, "79"),
    ]


def test_handle_key_identifies_ctypes_pointers_by_address() -> None:
    class Device(ctypes.Structure):
        _fields_ = [("x", ctypes.c_int)]

    a, b = Device(), Device()
    p1, p2, q = ctypes.pointer(a), ctypes.pointer(a), ctypes.pointer(b)
    assert p1 is not p2 and handle_key(p1) == handle_key(p2) != handle_key(q)
    assert handle_key(simnvml.SimDeviceHandle(1)) == simnvml.SimDeviceHandle(1)
