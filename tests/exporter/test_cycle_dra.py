"""The collect cycle with DRA allocations: when the node's ResourceSlices are asked for, and how
an unknown DRA device reads (collector `resourceslices`, its errors, one warning).

The slices come from `ScriptedSlices`, a `SliceSource` that answers what the test sets; the
allocations from the PodResources fixture file, through the same decoding as the kubelet's."""

from __future__ import annotations

import json
import logging
from collections.abc import Iterable
from pathlib import Path

import pytest
from exporter_fakes import ScriptedDevices, gpu, proc, uid, write_proc
from prometheus_client.parser import text_string_to_metric_families

from exporter.cycle import AttributionSources, CollectLoop
from exporter.node.podresources import AllocationsFile
from exporter.node.pods import PodsFile
from exporter.node.resourceslices import SliceLookup
from exporter.sources import DeviceKey, DeviceSweep, DeviceUuids

NVIDIA = "gpu.nvidia.com"
G0, G1 = gpu(0), gpu(1, processes=(proc(7, 0.4),))
KEY: DeviceKey = (NVIDIA, "n1", "gpu-0")


class ScriptedSlices:
    """A `SliceSource` whose lookups answer `uuids`/`ok`/`errors` as the test sets them."""

    def __init__(self) -> None:
        self.uuids: DeviceUuids | None = None
        self.ok = False
        self.errors = 0
        self.wanted: list[list[DeviceKey]] = []

    def lookup(self) -> SliceLookup:
        errors, self.errors = self.errors, 0
        return SliceLookup(self.uuids, self.ok, errors)

    def want(self, keys: Iterable[DeviceKey]) -> None:
        self.wanted.append(list(keys))

    def close(self) -> None:
        pass


def write_allocations(tmp: Path, *, dra: bool) -> None:
    """`idle` holds GPU 0 (through a claim when `dra`), `busy` GPU 1 by the device plugin."""
    claim = {"claim_namespace": "ns", "claim_name": "idle-gpu", "driver": NVIDIA}
    claim |= {"pool": "n1", "device": "gpu-0"}
    held: dict[str, object] = (
        {"resource_name": NVIDIA, "device_ids": [], "claim": claim}
        if dra
        else {"resource_name": "nvidia.com/gpu", "device_ids": [G0.uuid]}
    )
    plugin = {"resource_name": "nvidia.com/gpu", "device_ids": [G1.uuid]}
    rows = [
        {"namespace": "ns", "pod": "busy", "container": "main", **plugin},
        {"namespace": "ns", "pod": "idle", "container": "main", **held},
    ]
    (tmp / "podresources.json").write_text(json.dumps(rows))
    (tmp / "pods.json").write_text(json.dumps([{"uid": uid(7), "namespace": "ns", "name": "busy"}]))
    write_proc(tmp / "proc", 7, uid(7))


def loop_of(tmp: Path, slices: ScriptedSlices | None) -> CollectLoop:
    sources = AttributionSources(
        AllocationsFile(tmp / "podresources.json"),
        PodsFile(tmp / "pods.json"),
        tmp / "proc",
        slices,
    )
    return CollectLoop(ScriptedDevices(lambda: DeviceSweep((G0, G1))), sources, hostname="n1")


def read(loop: CollectLoop) -> dict[str, dict[str, float]]:
    """{family: {pod or collector or call: value}} of one cycle."""
    out: dict[str, dict[str, float]] = {}
    for family in text_string_to_metric_families(loop.collect_once().exposition.body.decode()):
        for s in family.samples:
            key = s.labels.get("pod") or s.labels.get("collector") or s.labels.get("call")
            if key is not None:
                out.setdefault(s.name, {})[key] = s.value
    return out


def test_a_node_without_dra_never_asks_for_slices(tmp_path: Path) -> None:
    write_allocations(tmp_path, dra=False)
    slices = ScriptedSlices()
    got = read(loop_of(tmp_path, slices))
    assert got["gpu_pod_allocated"] == {"busy": 1.0, "idle": 1.0}
    assert slices.wanted == []
    assert "resourceslices" not in got["gpu_exporter_collector_success"]


def test_an_idle_dra_gpu_reads_allocated_and_idle_once_its_slice_is_listed(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    write_allocations(tmp_path, dra=True)
    slices = ScriptedSlices()
    loop = loop_of(tmp_path, slices)
    with caplog.at_level(logging.WARNING, logger="exporter.cycle"):
        first = read(loop)  # the slices are not listed yet: the DRA pod is not named
    assert first["gpu_pod_allocated"] == {"busy": 1.0}
    assert first["gpu_exporter_collector_success"]["resourceslices"] == 0.0
    assert slices.wanted == [[KEY]]
    assert caplog.records == []  # not listed yet is not a fault
    slices.uuids, slices.ok = {KEY: G0.uuid}, True
    got = read(loop)
    assert got["gpu_pod_allocated"] == {"busy": 1.0, "idle": 1.0}
    assert got["gpu_pod_utilization_ratio"] == {"busy": 0.4, "idle": 0.0}
    assert got["gpu_exporter_collector_success"]["resourceslices"] == 1.0


def test_a_dra_device_missing_from_the_slices_is_warned_once_and_counted(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    write_allocations(tmp_path, dra=True)
    slices = ScriptedSlices()
    slices.uuids, slices.ok, slices.errors = {(NVIDIA, "n1", "gpu-1"): G1.uuid}, False, 2
    loop = loop_of(tmp_path, slices)
    with caplog.at_level(logging.WARNING, logger="exporter.cycle"):
        read(loop)
        got = read(loop)
    assert "idle" not in got["gpu_pod_allocated"]  # absent, never idle
    assert got["gpu_exporter_collector_success"]["resourceslices"] == 0.0
    assert got["gpu_exporter_errors_total"]["kubernetes_list_resourceslices"] == 2.0
    assert [r.getMessage() for r in caplog.records] == [
        "1 DRA devices cannot be attributed (not in the node's ResourceSlices), "
        "e.g. gpu.nvidia.com/n1/gpu-0"
    ]


def test_without_an_api_server_dra_devices_cannot_be_named(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    write_allocations(tmp_path, dra=True)
    with caplog.at_level(logging.WARNING, logger="exporter.cycle"):
        got = read(loop_of(tmp_path, None))
    assert got["gpu_pod_allocated"] == {"busy": 1.0}
    assert got["gpu_exporter_collector_success"]["resourceslices"] == 0.0
    assert "no API server" in caplog.text
