"""The export's node list: each node's physical GPUs, time-slice replicas and device memory. Pure.

**GPUs** are the exporter's devices on the node (distinct `UUID`s of its `DCGM_FI_DEV_GPU_UTIL`
series over the window, `prometheus.window.node_gpus_query`) wherever it saw any, else the
cluster's count. The cluster knows a node's physical GPUs when GPU feature discovery labels it
(`nvidia.com/gpu.count` is the device count and `nvidia.com/gpu.replicas` the replicas:
NVIDIA/k8s-device-plugin, `internal/lm/resource.go`) or when the node names its device-plugin
config key; otherwise it reads the advertised `nvidia.com/gpu` as GPUs (`kube.objects.nodes`).
On a node time-sliced by the device plugin's default config, without those labels, that is
replicas x GPUs (the plugin's `replicas` applies to every GPU of the node), while NVML, and so
the exporter, sees each physical GPU once. A MIG-enabled node keeps the cluster's count: the
replay has no MIG slices, and `DCGM_FI_DEV_GPU_UTIL` is not served under MIG.

**Replicas** (what a one-GPU pod's `gpu_milli` share is cut from): the cluster's where it knows
them; else, where the node advertises a whole multiple of 2 or more of the exporter's devices,
that multiple. A count the two disagree on otherwise is named in `problems`.

**Device memory** (`gpu_memory_mib`): the node's smallest device, `FB_USED + FB_FREE` as the
exporter served it (`prometheus.window.device_memory_query`); empty where the exporter served
no framebuffer series for the node. `simulate` then checks the pods' exported bytes against it.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

import pandas as pd

from reclaimer.model import Node

NODE_COLUMNS = ("sn", "gpu", "gpu_memory_mib")


@dataclass(frozen=True)
class NodeRow:
    name: str
    gpus: int  # physical GPUs
    replicas: int  # time-slice replicas per GPU (1: not shared)
    memory_mib: float | None  # per GPU, the smallest of the node's; None: not served


@dataclass(frozen=True)
class ExportNodes:
    rows: tuple[NodeRow, ...]
    problems: tuple[str, ...]

    def frame(self) -> pd.DataFrame:
        return pd.DataFrame(
            {
                "sn": [r.name for r in self.rows],
                "gpu": [r.gpus for r in self.rows],
                "gpu_memory_mib": [r.memory_mib for r in self.rows],
            },
            columns=list(NODE_COLUMNS),
        )

    def replicas(self) -> dict[str, int]:
        return {r.name: r.replicas for r in self.rows}

    def timesliced(self) -> dict[str, int]:
        """Nodes found time-sliced, with their replicas."""
        return {r.name: r.replicas for r in self.rows if r.replicas > 1}


def export_nodes(
    cluster: Iterable[Node], devices: Mapping[str, int], memory_mib: Mapping[str, float]
) -> ExportNodes:
    """The cluster's GPU nodes (in its order), then the nodes only the exporter saw (by name);
    `devices` and `memory_mib` are the exporter's, per Hostname."""
    rows, problems = [], []
    known = set()
    for node in cluster:
        row, problem = _from_cluster(node, devices.get(node.name, 0), memory_mib.get(node.name))
        if row.gpus <= 0:
            continue
        known.add(node.name)
        rows.append(row)
        if problem:
            problems.append(problem)
    for host, count in sorted(devices.items()):
        if host and host not in known and count > 0:
            rows.append(NodeRow(host, count, 1, memory_mib.get(host)))
    return ExportNodes(tuple(rows), tuple(problems))


def _from_cluster(node: Node, seen: int, memory: float | None) -> tuple[NodeRow, str | None]:
    """One cluster node with what the exporter saw of it (module doc), and what disagrees."""
    if seen <= 0 or (node.mig and node.gpus > 0):
        return NodeRow(node.name, node.gpus, node.replicas, memory), None
    if node.replicas > 1 or node.gpus == seen:
        return NodeRow(node.name, seen, node.replicas, memory), _differs(node, seen)
    advertised = node.gpus  # read as GPUs by the cluster: its replicas are unknown (1)
    if advertised % seen == 0 and advertised // seen >= 2:
        return NodeRow(node.name, seen, advertised // seen, memory), None
    return NodeRow(node.name, seen, 1, memory), _differs(node, seen)


def _differs(node: Node, seen: int) -> str | None:
    if node.gpus == seen:
        return None
    return (
        f"node {node.name}: the cluster counts {node.gpus} GPU(s), the exporter saw {seen} "
        f"device(s) over the window; the export counts {seen}"
    )
