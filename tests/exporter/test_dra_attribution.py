"""GPUs allocated through DRA, attributed end to end on a node that also has a device plugin pod
(`dra_node`): an idle DRA GPU, a busy one, one claim shared by two pods, a MIG device allocated
through DRA, and a device plugin GPU beside them."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest
from dra_node import NODE, PODS, Node, dra_node


@pytest.fixture
def node(tmp_path: Path) -> Iterator[Node]:
    with dra_node(tmp_path) as n:
        yield n


def test_idle_dra_gpu_is_allocated_and_idle_and_busy_ones_read_their_own_pods(node: Node) -> None:
    node.pods.refresh()
    node.slices.refresh()
    node.scrape()  # GPM (the MIG instance's activity) needs two samples
    got = node.scrape()
    assert got.values["gpu_pod_allocated"] == dict.fromkeys(PODS, 1.0)
    usage = got.values["gpu_pod_utilization_ratio"]
    assert usage["idle-dra"] == 0.0
    for name in ("busy-dra", "share-a", "share-b", "mig-dra", "plugin"):
        assert usage[name] == pytest.approx(PODS[name][1], abs=0.02), name
    gpus = node.emulated.lib.gpus
    assert got.labels["idle-dra"]["UUID"] == gpus[0].uuid
    mig = got.labels["mig-dra"]
    assert (mig["UUID"], mig["GPU_I_ID"]) == (gpus[3].uuid, "7")
    assert got.collectors["resourceslices"] == 1.0
    assert {s.query["fieldSelector"][0] for s in node.api.seen if "resource" in s.path} == {
        f"spec.nodeName={NODE}"
    }


def test_a_shared_claim_whose_busy_process_has_no_known_owner_is_unknown_not_idle(
    node: Node,
) -> None:
    shutil.rmtree(node.proc_root / "201")  # share-a's busy process: its cgroup is gone
    node.pods.refresh()
    node.slices.refresh()
    got = node.scrape()
    allocated = got.values["gpu_pod_allocated"]
    assert allocated["share-a"] == allocated["share-b"] == 1.0
    usage = got.values["gpu_pod_utilization_ratio"]
    assert "share-a" not in usage and "share-b" not in usage
    assert usage["busy-dra"] == pytest.approx(0.6, abs=0.02)


def test_without_the_slices_an_idle_dra_pod_is_absent_never_idle(node: Node) -> None:
    node.api.slice_versions = ()  # every version answers 404: DRA devices cannot be named
    node.pods.refresh()
    node.slices.refresh()
    got = node.scrape()
    # only the device plugin pod is allocated; DRA pods with a process are still found through
    # its cgroup (not allocated), and the idle DRA pod, with no process, has no series at all
    assert got.values["gpu_pod_allocated"] == {
        "plugin": 1.0,
        **dict.fromkeys(["busy-dra", "share-a", "share-b", "mig-dra"], 0.0),
    }
    assert "idle-dra" not in got.labels
    assert got.collectors["resourceslices"] == 0.0
