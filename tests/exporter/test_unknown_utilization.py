"""Unknown per-process utilization (NaN from the NVML source) through attribution and rendering:
the pod's utilization sample is left out, its other series stay, known processes still sum and
still respect the device cap, and promtool accepts the result."""

from __future__ import annotations

import math
from types import MappingProxyType

import pytest
from exporter_fakes import alloc, gpu, proc, promtool_problems, uid

from exporter.attribution import attribute
from exporter.model import DeviceReading, NodeSnapshot, PodUsage, ProcessUsage
from exporter.nvml.source import NvmlSource
from exporter.render import exposition_text
from exporter.sim.nvml.device import SimGpu, SimProcess, h100
from exporter.sim.nvml.library import SimNvml
from exporter.sources import Allocation, CgroupRef, PodIdentity, PodIndex

NAN = float("nan")
INDEX = PodIndex(
    MappingProxyType({uid(n): PodIdentity(uid(n), "ns", f"p{n}") for n in range(1, 4)})
)
OWNERS = {10 + n: CgroupRef(uid(n), None) for n in range(1, 4)}  # pid 1n belongs to pod pn


def _shared(*ids: int) -> list[Allocation]:
    return [alloc("ns", f"p{n}", f"{gpu(0).uuid}::{n}") for n in ids]


# (device util %, processes, pods allocated) -> {pod: utilization, None = unknown}
CASES = [
    pytest.param(100.0, (proc(11, NAN),), _shared(1), {"p1": None}, id="only-process-unknown"),
    pytest.param(
        100.0,
        (proc(11, NAN), proc(12, 0.4)),
        _shared(1, 2, 3),
        {"p1": None, "p2": 0.4, "p3": 0.0},
        id="unknown-pod-beside-known-and-idle",
    ),
    pytest.param(
        100.0,
        (proc(11, NAN), proc(11, 0.3)),
        _shared(1),
        {"p1": 0.3},
        id="pod-sums-its-known-processes",
    ),
    pytest.param(
        50.0,
        (proc(11, NAN), proc(12, 0.9), proc(13, 0.6)),
        _shared(1, 2, 3),
        {"p1": None, "p2": 0.6, "p3": 0.4},
        id="cap-to-the-whole-device-ignores-unknown",
    ),
]


@pytest.mark.parametrize(("util", "procs", "allocations", "expected"), CASES)
def test_unknown_processes_leave_the_sum_and_the_cap_intact(
    util: float,
    procs: tuple[ProcessUsage, ...],
    allocations: list[Allocation],
    expected: dict[str, float | None],
) -> None:
    device = gpu(0, processes=procs, values={"DCGM_FI_DEV_GPU_UTIL": util})
    usage = attribute([device], allocations, OWNERS, INDEX)
    got = {u.ref.pod: None if math.isnan(u.utilization) else round(u.utilization, 9) for u in usage}
    assert got == expected
    text = exposition_text(NodeSnapshot("n", 0.0, 0.0, (device,), usage, {}, {}))
    for pod, value in expected.items():
        util_lines = [ln for ln in text.splitlines() if _is(ln, "gpu_pod_utilization_ratio", pod)]
        assert len(util_lines) == (0 if value is None else 1)
        for family in ("gpu_pod_allocated", "gpu_pod_memory_used_bytes", "gpu_pod_processes"):
            assert sum(_is(ln, family, pod) for ln in text.splitlines()) == 1
    assert "NaN" not in text


def _is(line: str, family: str, pod: str) -> bool:
    return line.startswith(family + "{") and f'pod="{pod}"' in line


def _nvml_node() -> tuple[list[SimGpu], list[Allocation]]:
    """GPU 0 without process utilization (p1), GPU 1 in MIG mode with p2 on GPU instance 7."""
    plain, mig = h100(0), h100(1, mig=True)
    plain.process_utilization_supported = False
    plain.processes.append(SimProcess(11, sm=lambda t: 0.5, memory_bytes=lambda t: 1 << 30))
    mig.processes.append(
        SimProcess(12, sm=lambda t: 0.5, memory_bytes=lambda t: 1 << 30, gpu_instance_id=7)
    )
    assert mig.mig is not None and mig.mig[0] is not None
    allocations = [
        alloc("ns", "p1", plain.uuid),
        alloc("ns", "p2", mig.mig[0].uuid),
    ]
    return [plain, mig], allocations


def _pods(devices: tuple[DeviceReading, ...], allocations: list[Allocation]) -> list[PodUsage]:
    return list(attribute(devices, allocations, OWNERS, INDEX))


@pytest.mark.prometheus
def test_the_nvml_source_nan_renders_without_the_utilization_sample() -> None:
    now = [10_000.0]
    gpus, allocations = _nvml_node()
    source = NvmlSource(SimNvml(gpus, clock=lambda: now[0]), clock=lambda: now[0])
    try:
        first = source.read().devices  # MIG: one GPM sample only, so no activity yet
        now[0] += 10.0
        second = source.read().devices
    finally:
        source.close()
    by_pod = {u.ref.pod: u for u in _pods(first, allocations)}
    assert math.isnan(by_pod["p1"].utilization) and math.isnan(by_pod["p2"].utilization)
    assert by_pod["p1"].memory_bytes == 1 << 30 and by_pod["p2"].allocated
    text = exposition_text(NodeSnapshot("n", 0.0, 0.0, first, tuple(by_pod.values()), {}, {}))
    assert "gpu_pod_utilization_ratio" not in text and "NaN" not in text
    assert 'gpu_pod_allocated{namespace="ns",pod="p2"' in text
    assert promtool_problems(text) == []
    later = {u.ref.pod: u.utilization for u in _pods(second, allocations)}
    assert math.isnan(later["p1"]) and later["p2"] == pytest.approx(0.5)  # GPM now has two
