"""A GPU node whose GPUs come from DRA, beside a device plugin pod, read by the real exporter.

Through the real exporter path: the NVML emulator read by the real `NvmlSource`, the collect
loop, the renderer, and the node readers: the kubelet's PodResources `List` over a real gRPC
socket sending `dynamic_resources` (`fake_kubelet`), the node's pods and ResourceSlices from a
fake API server with the real `resource.k8s.io/v1` schema and field selector (`fake_slices`),
and `/proc/<pid>/cgroup` files. The node: an idle DRA GPU, a busy one, one claim shared by two
pods, a MIG device allocated through DRA, and a device plugin GPU beside them.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from exporter_fakes import Clock, EmulatedNode, ScriptedDevices, uid, write_proc
from fake_kubelet import claim_resource, container, devices, dynamic, pod, response, serve_kubelet
from fake_pods_api import FakePodsApi, pod_json, serve
from fake_slices import gpu_device, mig_device, slice_json
from prometheus_client.parser import text_string_to_metric_families

from exporter.cycle import AttributionSources, CollectLoop
from exporter.node.apiserver import ApiEndpoint
from exporter.node.podresources import PodResourcesClient
from exporter.node.pods import KubernetesPods
from exporter.node.resourceslices import KubernetesResourceSlices
from exporter.sim.nvml.device import SimProcess, h100

NODE = "gpu-node-1"
NS = "team"
MIG_NAME = "gpu-3-mig-1g10gb-19-0"
# pod -> (its PID, SM busy ratio, the GPU index it runs on, MIG instance)
PODS = {
    "idle-dra": (None, 0.0, 0, None),
    "busy-dra": (101, 0.6, 1, None),
    "share-a": (201, 0.3, 2, None),
    "share-b": (202, 0.0, 2, None),
    "mig-dra": (301, 0.5, 3, 7),
    "plugin": (401, 0.2, 4, None),
}


def _kubelet_answer(gpus: list[str]) -> bytes:
    """What a 1.34 kubelet lists: DRA pods by claim and device, the device plugin pod by UUID."""

    def dra(name: str, claim: str, device: str) -> bytes:
        resources = [claim_resource("gpu.nvidia.com", NODE, device)]
        return pod(name, NS, [container("main", [], dynamic(claim, NS, resources))])

    return response(
        [
            dra("idle-dra", "idle-dra-gpu-4xk2p", "gpu-0"),
            dra("busy-dra", "busy-dra-gpu-9qz7w", "gpu-1"),
            dra("share-a", "shared-gpu", "gpu-2"),  # one claim, referenced by both pods
            dra("share-b", "shared-gpu", "gpu-2"),
            dra("mig-dra", "mig-dra-mig-2m7fd", MIG_NAME),
            pod("plugin", NS, [container("main", [devices("nvidia.com/gpu", [gpus[4]])])]),
        ]
    )


@dataclass(frozen=True)
class Scrape:
    values: dict[str, dict[str, float]]  # per-pod family -> pod -> value
    labels: dict[str, dict[str, str]]  # pod -> the labels of its `gpu_pod_allocated` series
    collectors: dict[str, float]  # gpu_exporter_collector_success


@dataclass
class Node:
    emulated: EmulatedNode
    api: FakePodsApi
    proc_root: Path
    loop: CollectLoop
    pods: KubernetesPods
    slices: KubernetesResourceSlices

    def scrape(self) -> Scrape:
        """One collect cycle, read back from its exposition."""
        got = Scrape({}, {}, {})
        body = self.loop.collect_once().exposition.body.decode()
        for family in text_string_to_metric_families(body):
            for sample in family.samples:
                if "pod" in sample.labels:
                    got.values.setdefault(sample.name, {})[sample.labels["pod"]] = sample.value
                    if sample.name == "gpu_pod_allocated":
                        got.labels[sample.labels["pod"]] = sample.labels
                elif sample.name == "gpu_exporter_collector_success":
                    got.collectors[sample.labels["collector"]] = sample.value
        return got


@contextmanager
def dra_node(tmp_path: Path) -> Iterator[Node]:
    """The node of the module docstring, its API server and kubelet serving until the end."""
    gpus = [h100(i, seed=5, mig=(i == 3)) for i in range(5)]
    for pid, sm, index, gi in PODS.values():
        if pid is not None:
            busy = SimProcess(pid, sm=lambda _t, sm=sm: sm, memory_bytes=lambda _t: 1 << 30)
            busy.gpu_instance_id = gi
            gpus[index].processes.append(busy)
            write_proc(tmp_path / "proc", pid, uid(pid), f"{pid:064x}")
    uuids = [g.uuid for g in gpus]
    instance = next(m for m in gpus[3].mig or () if m is not None and m.gpu_instance_id == 7)
    api = FakePodsApi(
        pods=[
            pod_json(uid(pid or 1), NS, name, NODE, {"main": f"{pid or 1:064x}"})
            for name, (pid, *_) in PODS.items()
        ],
        slices=[
            slice_json(
                NODE,
                [gpu_device(i, uuids[i]) for i in range(3)]
                + [mig_device(MIG_NAME, instance.uuid, uuids[3], "1g.10gb")],
            ),
            slice_json("gpu-node-2", [gpu_device(0, "GPU-elsewhere")]),  # not this node's
        ],
    )
    emulated = EmulatedNode(gpus)
    with (
        serve(api) as url,
        serve_kubelet(tmp_path / "kubelet.sock", [_kubelet_answer(uuids)]) as sock,
    ):
        pods = KubernetesPods(NODE, ApiEndpoint(url), start=False)
        slices = KubernetesResourceSlices(NODE, ApiEndpoint(url), start=False)
        allocations = PodResourcesClient(sock, timeout=60)  # a give-up for a hang
        sources = AttributionSources(allocations, pods, tmp_path / "proc", slices)
        devices = ScriptedDevices(lambda: emulated.sweep(5.0))
        loop = CollectLoop(devices, sources, hostname=NODE, clock=Clock(1_700_000_000.0))
        try:
            yield Node(emulated, api, tmp_path / "proc", loop, pods, slices)
        finally:
            allocations.close()
            slices.close()
            pods.close()
