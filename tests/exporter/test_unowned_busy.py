"""Unowned busy time is unknown, not idle: four pods share one time-sliced GPU, one keeps it 90%
busy; when the exporter cannot tell whose process that is, no pod of the GPU gets a utilization
sample (absent, never 0.0) and all stay `gpu_pod_allocated`.

Through the real exporter path: the NVML emulator read by the real `NvmlSource`, the collect
loop, the renderer, and the node readers (`/proc/<pid>/cgroup` files, the PodResources fixture,
and the pods from the API server through `KubernetesPods` speaking HTTP to a fake API server),
under both readings of nvml.h's process utilization (`process_rows`)."""

from __future__ import annotations

import shutil
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from exporter_fakes import Clock
from fake_pods_api import FakePodsApi, pod_json, serve
from prometheus_client.parser import text_string_to_metric_families

from exporter.cycle import AttributionSources, CollectLoop
from exporter.node.apiserver import ApiEndpoint
from exporter.node.podresources import AllocationsFile
from exporter.node.pods import KubernetesPods
from exporter.sim.backend import SimNode, build_sim_backend
from exporter.sim.nvml.sampling import ProcessRows
from exporter.sources import BackendParts

T0 = 1_700_000_000.0
NODE = "sim-node"
BUSY = "train-0"
WORKLOADS = "\n".join(
    f"- {{namespace: team, pod: {pod}, shape: constant, demand: {demand}, shared: true}}"
    for pod, demand in [(BUSY, 0.9), ("nb-1", 0.0), ("nb-2", 0.0), ("nb-3", 0.0)]
)


def collect(loop: CollectLoop, clock: Clock) -> dict[str, dict[str, float]]:
    """Two cycles 5 s apart; the second one's per-pod families, {family: {pod: value}}."""
    loop.collect_once()
    clock.now += 5
    out: dict[str, dict[str, float]] = {}
    for family in text_string_to_metric_families(loop.collect_once().exposition.body.decode()):
        for s in family.samples:
            if "pod" in s.labels:
                out.setdefault(s.name, {})[s.labels["pod"]] = s.value
    return out


@dataclass(frozen=True)
class Node:
    sim: SimNode
    parts: BackendParts
    api: FakePodsApi  # the API server the exporter lists the node's pods from
    pods: KubernetesPods
    clock: Clock

    def loop(self) -> CollectLoop:
        assert self.parts.podresources_file is not None
        sources = AttributionSources(
            AllocationsFile(self.parts.podresources_file), self.pods, self.parts.proc_root
        )
        return CollectLoop(self.parts.devices, sources, hostname=NODE, clock=self.clock)


@pytest.fixture
def node(tmp_path: Path, process_rows: ProcessRows) -> Iterator[Node]:
    (tmp_path / "workloads.yaml").write_text(WORKLOADS)
    clock = Clock(T0)
    parts, sim = build_sim_backend(
        gpus=1,
        mig=0,
        pods=4,
        seed=1,
        workloads_file=tmp_path / "workloads.yaml",
        fixture_dir=tmp_path / "fixtures",
        node_name=NODE,
        clock=clock,
        process_rows=process_rows,
    )
    api = FakePodsApi(
        pods=[
            pod_json(p.uid, p.spec.namespace, p.spec.pod, NODE, {"main": p.container_id})
            for p in sim.pods
        ]
    )
    with serve(api) as url:
        pods = KubernetesPods(NODE, ApiEndpoint(url), start=False)
        try:
            yield Node(sim, parts, api, pods, clock)
        finally:
            pods.close()


def busy_pid(sim: SimNode) -> int:
    return next(p.pid for p in sim.placed if sim.pods[p.pod].spec.pod == BUSY)


def api_down(node: Node) -> None:
    node.api.status = 503  # the list fails: no pod index at all


def proc_gone(node: Node) -> None:
    shutil.rmtree(node.parts.proc_root / str(busy_pid(node.sim)))


def cgroup_unreadable(node: Node) -> None:
    cgroup = node.parts.proc_root / str(busy_pid(node.sim)) / "cgroup"
    cgroup.unlink()
    cgroup.mkdir()  # reading it fails with IsADirectoryError, an OSError like EACCES


@pytest.mark.parametrize("fault", [api_down, proc_gone, cgroup_unreadable])
def test_pods_of_a_busy_time_sliced_gpu_whose_owner_is_unknown_have_no_utilization(
    node: Node, fault: Callable[[Node], None]
) -> None:
    fault(node)
    node.pods.refresh()
    got = collect(node.loop(), node.clock)
    everyone = {p.spec.pod for p in node.sim.pods}
    assert {p.gpu for p in node.sim.placed} == {0} and len(everyone) == 4
    assert got["gpu_pod_allocated"] == dict.fromkeys(everyone, 1.0)
    assert got.get("gpu_pod_utilization_ratio", {}) == {}
    assert got.get("gpu_pod_memory_used_bytes", {}) == {}


def test_with_every_owner_known_the_same_gpu_reads_one_busy_pod_and_three_idle(
    node: Node,
) -> None:
    node.pods.refresh()
    usage = collect(node.loop(), node.clock)["gpu_pod_utilization_ratio"]
    assert usage.pop(BUSY) == pytest.approx(0.9, abs=0.02)
    assert usage == {"nb-1": 0.0, "nb-2": 0.0, "nb-3": 0.0}
