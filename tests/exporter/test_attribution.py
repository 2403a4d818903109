"""Per-pod attribution (pure): exclusive, time-sliced, MIG, idle holders, no API, vanished pods."""

from __future__ import annotations

import math
from types import MappingProxyType

import pytest
from exporter_fakes import alloc, gpu, mig_instance, proc, uid
from hypothesis import given
from hypothesis import strategies as st

from exporter.attribution import attribute
from exporter.model import DeviceReading
from exporter.sources import Allocation, CgroupRef, PodIdentity, PodIndex

G0, G1 = gpu(0), gpu(1)
PODS = {
    uid(n): PodIdentity(uid(n), ns, name)
    for n, ns, name in [(1, "a", "train"), (2, "b", "nb"), (3, "c", "hpo"), (4, "d", "priv")]
}
INDEX = PodIndex(MappingProxyType(PODS))
OWNERS = {10 + n: CgroupRef(uid(n), None) for n in range(1, 5)}


def rows(
    devices: list[DeviceReading],
    allocations: list[Allocation],
    index: PodIndex | None = INDEX,
    owners: dict[int, CgroupRef] | None = None,
) -> list[tuple[str, str, int, float | None, int | None, int | None, bool]]:
    """One row per usage; an unknown (NaN) utilization reads None so that rows compare."""
    usage = attribute(devices, allocations, owners if owners is not None else OWNERS, index)
    return [
        (
            u.ref.pod,
            u.ref.container,
            u.device.index,
            None if math.isnan(u.utilization) else round(u.utilization, 6),
            u.memory_bytes,
            u.processes,
            u.allocated,
        )
        for u in usage
    ]


def with_util(device: DeviceReading, pct: float, *procs: object) -> DeviceReading:
    return gpu(device.index, processes=tuple(procs), values={"DCGM_FI_DEV_GPU_UTIL": pct})  # type: ignore[arg-type]


CASES = [
    pytest.param(
        [with_util(G0, 70, proc(11, 0.7, 5 << 30))],
        [alloc("a", "train", G0.uuid)],
        [("train", "main", 0, 0.7, 5 << 30, 1, True)],
        id="exclusive-gpu",
    ),
    pytest.param(
        [with_util(G0, 80, proc(11, 0.5), proc(13, 0.3))],
        [
            alloc("a", "train", f"{G0.uuid}::0"),
            alloc("b", "nb", f"{G0.uuid}::1"),
            alloc("c", "hpo", f"{G0.uuid}::2"),
        ],
        [
            ("train", "main", 0, 0.5, 1 << 20, 1, True),
            ("nb", "main", 0, 0.0, 0, 0, True),
            ("hpo", "main", 0, 0.3, 1 << 20, 1, True),
        ],
        id="time-sliced-three-pods-one-idle",
    ),
    pytest.param(
        [with_util(G0, 60, proc(11, 0.5), proc(13, 0.3))],
        [alloc("a", "train", f"{G0.uuid}::0"), alloc("c", "hpo", f"{G0.uuid}::1")],
        [
            ("train", "main", 0, 0.5, 1 << 20, 1, True),
            ("hpo", "main", 0, 0.3, 1 << 20, 1, True),
        ],
        id="time-sliced-device-value-is-its-last-period-not-a-cap",
    ),
    pytest.param(
        [with_util(G0, 60, proc(11, 0.8), proc(13, 0.4))],
        [alloc("a", "train", f"{G0.uuid}::0"), alloc("c", "hpo", f"{G0.uuid}::1")],
        [
            ("train", "main", 0, 0.666667, 1 << 20, 1, True),
            ("hpo", "main", 0, 0.333333, 1 << 20, 1, True),
        ],
        id="time-sliced-sampling-skew-capped-at-the-whole-device",
    ),
    pytest.param(
        [with_util(G0, 0), with_util(G1, 0)],
        [alloc("b", "nb", G0.uuid, G1.uuid)],
        [("nb", "main", 0, 0.0, 0, 0, True), ("nb", "main", 1, 0.0, 0, 0, True)],
        id="allocated-no-process",
    ),
    pytest.param(
        [with_util(G0, 90, proc(11, 0.4), proc(111, 0.5))],
        [alloc("a", "train", G0.uuid)],
        [("train", "main", 0, 0.9, 2 << 20, 2, True)],
        id="two-processes-one-pod-host-pid-unknown-goes-to-sole-holder",
    ),
    pytest.param(
        [with_util(G0, 50, proc(14, 0.5))],
        [alloc("a", "train", G1.uuid)],
        [("priv", "", 0, 0.5, 1 << 20, 1, False)],
        id="process-of-a-pod-not-allocated-the-device",
    ),
    pytest.param(
        [mig_instance(0, 1, processes=(proc(11, 0.6),)), mig_instance(0, 2)],
        [
            alloc("a", "train", mig_instance(0, 1).mig_uuid or ""),
            alloc("b", "nb", "MIG-GPU-" + G0.uuid.removeprefix("GPU-") + "/2/0"),
        ],
        [("train", "main", 0, 0.6, 1 << 20, 1, True), ("nb", "main", 0, 0.0, 0, 0, True)],
        id="mig-by-uuid-and-legacy-id",
    ),
    pytest.param(
        [with_util(G0, 10)],
        [alloc("x", "elsewhere", "GPU-not-on-this-node")],
        [],
        id="unknown-device-id-ignored",
    ),
]


@pytest.mark.parametrize(("devices", "allocations", "expected"), CASES)
def test_attribute(
    devices: list[DeviceReading], allocations: list[Allocation], expected: list[tuple[object, ...]]
) -> None:
    assert rows(devices, allocations) == expected


def test_without_the_api_a_sole_holder_gets_the_processes_and_shared_devices_are_unknown() -> None:
    devices = [with_util(G0, 40, proc(11, 0.4)), with_util(G1, 70, proc(12, 0.3), proc(13, 0.4))]
    allocations = [
        alloc("a", "train", G0.uuid),
        alloc("b", "nb", f"{G1.uuid}::0"),
        alloc("c", "hpo", f"{G1.uuid}::1"),
    ]
    assert rows(devices, allocations, index=None) == [
        ("train", "main", 0, 0.4, 1 << 20, 1, True),
        ("nb", "main", 1, None, None, None, True),
        ("hpo", "main", 1, None, None, None, True),
    ]


FOUR_SLICES = [
    alloc(ns, name, f"{G0.uuid}::{n}")
    for n, (ns, name) in enumerate([("a", "train"), ("b", "nb"), ("c", "hpo"), ("d", "priv")])
]
UNKNOWN4 = [(pod, "main", 0, None, None, None, True) for pod in ("hpo", "nb", "priv", "train")]

UNOWNED = [
    pytest.param(
        [with_util(G0, 90, proc(11, 0.9), proc(12, 0.0), proc(13, 0.0), proc(14, 0.0))],
        None,
        OWNERS,
        UNKNOWN4,
        id="api-down-four-pods-of-a-busy-time-sliced-gpu-are-unknown",
    ),
    pytest.param(
        [with_util(G0, 90, proc(99, 0.9), proc(12, 0.0), proc(13, 0.0), proc(14, 0.0))],
        INDEX,
        OWNERS,
        UNKNOWN4,
        id="proc-gone-busy-process-unowned-its-neighbours-unknown-too",
    ),
    pytest.param(
        [with_util(G0, 50, proc(11, 0.5), proc(99, float("nan")))],
        INDEX,
        OWNERS,
        UNKNOWN4,
        id="unowned-process-of-unknown-utilization-counts-as-busy",
    ),
    pytest.param(
        [with_util(G0, 50, proc(11, 0.5), proc(99, 0.0))],
        INDEX,
        OWNERS,
        [
            ("hpo", "main", 0, 0.0, 0, 0, True),
            ("nb", "main", 0, 0.0, 0, 0, True),
            ("priv", "main", 0, 0.0, 0, 0, True),
            ("train", "main", 0, 0.5, 1 << 20, 1, True),
        ],
        id="unowned-idle-process-changes-nothing",
    ),
]


@pytest.mark.parametrize(("devices", "index", "owners", "expected"), UNOWNED)
def test_holders_of_a_device_with_unowned_busy_time_are_unknown_never_idle(
    devices: list[DeviceReading],
    index: PodIndex | None,
    owners: dict[int, CgroupRef],
    expected: list[tuple[object, ...]],
) -> None:
    assert sorted(rows(devices, FOUR_SLICES, index, owners)) == expected


def test_a_pod_running_on_a_device_it_does_not_hold_is_unknown_there_too() -> None:
    devices = [with_util(G0, 80, proc(14, 0.3), proc(99, 0.5))]
    allocations = [alloc("a", "train", f"{G0.uuid}::0"), alloc("b", "nb", f"{G0.uuid}::1")]
    assert sorted(rows(devices, allocations)) == [
        ("nb", "main", 0, None, None, None, True),
        ("priv", "", 0, None, None, None, False),
        ("train", "main", 0, None, None, None, True),
    ]


def test_a_vanished_pod_has_no_series_in_the_next_cycle() -> None:
    before = rows([with_util(G0, 50, proc(11, 0.5))], [alloc("a", "train", G0.uuid)])
    after = rows([with_util(G0, 0)], [])
    assert [r[0] for r in before] == ["train"] and after == []


def test_container_name_comes_from_the_runtime_id_when_two_containers_share_a_gpu() -> None:
    index = PodIndex(MappingProxyType(PODS), MappingProxyType({"c1" * 32: "worker"}))
    owners = {11: CgroupRef(uid(1), "c1" * 32)}
    allocations = [
        alloc("a", "train", f"{G0.uuid}::0", container="launcher"),
        alloc("a", "train", f"{G0.uuid}::1", container="worker"),
    ]
    assert rows([with_util(G0, 30, proc(11, 0.3))], allocations, index, owners) == [
        ("train", "launcher", 0, 0.0, 0, 0, True),
        ("train", "worker", 0, 0.3, 1 << 20, 1, True),
    ]


@given(
    util=st.floats(0, 100),
    sms=st.lists(st.floats(0, 1), min_size=1, max_size=6),
    holders=st.integers(1, 4),
)
def test_pods_of_a_time_sliced_gpu_never_add_up_to_more_than_the_whole_device(
    util: float, sms: list[float], holders: int
) -> None:
    procs = [proc(11 + i % 4, sm) for i, sm in enumerate(sms)]
    allocations = [
        alloc(PODS[uid(n)].namespace, PODS[uid(n)].name, f"{G0.uuid}::{n}")
        for n in range(1, holders + 1)
    ]
    usage = attribute([with_util(G0, util, *procs)], allocations, OWNERS, INDEX)
    assert sum(u.utilization for u in usage) <= 1.0 + 1e-9
    if sum(sms) <= 1.0:  # nothing to scale: each pod keeps its processes' sum
        assert sum(u.utilization for u in usage) == pytest.approx(sum(sms))
    held = {u.ref.pod for u in usage if u.allocated}
    assert held == {PODS[uid(n)].name for n in range(1, holders + 1)}
