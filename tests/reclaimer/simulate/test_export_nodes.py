"""The export's nodes: physical GPUs from the exporter's devices, replicas, device memory."""

from __future__ import annotations

from types import MappingProxyType

import pytest

from reclaimer.model import Node
from reclaimer.simulate.export_nodes import NodeRow, export_nodes

MIG = MappingProxyType({"nvidia.com/gpu": 7})
# (id, the cluster's node, devices the exporter saw, expected row, a problem named)
CASES = [
    # time-sliced by the device plugin's default config, no GFD labels: the cluster reads the
    # 4 advertised replicas as GPUs; NVML sees 2 devices
    ("default-config-timesliced", Node("n", 4), 2, NodeRow("n", 2, 2, 16384.0), False),
    ("gfd-labelled-timesliced", Node("n", 2, replicas=2), 2, NodeRow("n", 2, 2, 16384.0), False),
    ("whole-gpus", Node("n", 8), 8, NodeRow("n", 8, 1, 16384.0), False),
    ("exporter-absent", Node("n", 4), 0, NodeRow("n", 4, 1, 16384.0), False),
    ("mig-keeps-the-cluster", Node("n", 7, mig=MIG), 1, NodeRow("n", 7, 1, 16384.0), False),
    ("fewer-devices-not-a-multiple", Node("n", 8), 3, NodeRow("n", 3, 1, 16384.0), True),
    ("labelled-replicas-disagree", Node("n", 4, replicas=2), 2, NodeRow("n", 2, 2, 16384.0), True),
]


@pytest.mark.parametrize(
    ("node", "seen", "expected", "problem"), [c[1:] for c in CASES], ids=[c[0] for c in CASES]
)
def test_a_node_counts_the_exporters_devices_and_its_replicas(node, seen, expected, problem):
    devices = {node.name: seen} if seen else {}
    nodes = export_nodes([node], devices, {"n": 16384.0})

    assert nodes.rows == (expected,)
    assert bool(nodes.problems) == problem
    if problem:
        assert f"the exporter saw {seen} device(s)" in nodes.problems[0]


def test_nodes_only_the_exporter_saw_follow_the_clusters_and_gpu_less_nodes_are_left_out():
    cluster = [Node("a", 2), Node("cpu-only", 0), Node("b", 1)]
    nodes = export_nodes(cluster, {"gone": 8, "a": 2, "": 3}, {"gone": 81920.0})

    assert [(r.name, r.gpus, r.memory_mib) for r in nodes.rows] == [
        ("a", 2, None),
        ("b", 1, None),
        ("gone", 8, 81920.0),
    ]
    frame = nodes.frame()
    assert frame.columns.tolist() == ["sn", "gpu", "gpu_memory_mib"]
    assert frame["gpu_memory_mib"].isna().tolist() == [True, True, False]


def test_time_sliced_nodes_are_named_with_their_replicas():
    cluster = [Node("ts", 6), Node("whole", 4), Node("gfd", 2, replicas=4)]
    nodes = export_nodes(cluster, {"ts": 2, "whole": 4, "gfd": 2}, {})

    assert nodes.timesliced() == {"ts": 3, "gfd": 4}
    assert nodes.replicas() == {"ts": 3, "whole": 1, "gfd": 4}
