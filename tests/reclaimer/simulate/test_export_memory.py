"""The export's memory: each pod's bytes on the utilization's grid, each node's device memory and
physical GPUs, written as files `simulate` reads back as measured (no scaling)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from reclaimer.model import ClusterView, Node
from reclaimer.prometheus.arrivals import none_found
from reclaimer.prometheus.window import Placement, WindowRead
from reclaimer.simulate.export import build_export, write_export
from reclaimer.simulate.sharing.memory import read_memory
from reclaimer.simulate.trace import TraceError, parse_nodes, read_nodes, read_profiles

STEP = 60.0
T0 = 1.7e9
GIB = 2**30


def _long(rows: dict[str, list[float]]) -> pd.DataFrame:
    """Per-pod frame (namespace `s`), one sample a step from T0."""
    return pd.concat(
        [
            pd.DataFrame(
                {
                    "namespace": "s",
                    "pod": pod,
                    "timestamp": T0 + STEP * np.arange(len(values)),
                    "value": values,
                }
            )
            for pod, values in rows.items()
        ],
        ignore_index=True,
    )


def _read(memory: pd.DataFrame | None) -> WindowRead:
    """Pods a and b shared the one GPU of `ts`; b's second sample was unreadable."""
    return WindowRead(
        pods=_long({"a": [0.3] * 4, "b": [0.3, np.nan, 0.3, 0.3]}),
        placements={("s", "a"): Placement(1, "ts"), ("s", "b"): Placement(1, "ts")},
        node_gpus={"ts": 1},
        queues={},
        arrivals=none_found(T0, T0 + 10 * STEP),
        recorded=False,
        requests=7,
        problems=(),
        memory=memory,
        device_memory_mib={"ts": 20480.0},
    )


MEMORY = _long({"a": [8.0 * GIB] * 4, "b": [8.0 * GIB, 9.0 * GIB, 13.0 * GIB, 8.0 * GIB]})
# time-sliced by the device plugin's default config, no GFD labels: the cluster reads its two
# advertised replicas as two GPUs
VIEW = ClusterView(T0, (), (), (), (Node("ts", 2),), ())


def test_a_time_sliced_node_counts_its_physical_gpu_and_its_pods_hold_a_replica_each():
    export = build_export(_read(MEMORY), VIEW, STEP)

    assert export.nodes.to_dict("records") == [{"sn": "ts", "gpu": 1, "gpu_memory_mib": 20480.0}]
    assert export.pods.set_index("name")["gpu_milli"].to_dict() == {"s/a": 500, "s/b": 500}
    assert export.timesliced == {"ts": 2}


def test_memory_rows_are_the_bytes_at_the_utilizations_timestamps():
    export = build_export(_read(MEMORY), VIEW, STEP)
    assert export.memory is not None

    keys = ["container_ip", "timestamp_anon"]
    assert export.memory[keys].equals(export.utilization[keys])  # b's unreadable step: neither
    b = export.memory[export.memory["container_ip"] == "s/b"]
    assert b["value"].tolist() == [8 * GIB, 13 * GIB, 8 * GIB]
    assert export.problems == ()


def test_simulate_reads_the_written_export_as_measured(tmp_path):
    paths = write_export(build_export(_read(MEMORY), VIEW, STEP), tmp_path)

    nodes = read_nodes(paths["nodes"])
    profiles = read_profiles(paths["utilization"])
    gib = read_memory(paths["memory"], profiles, None)

    assert nodes.measured_memory and nodes.memory(0) == 20.0
    b = profiles.names.index("s/b")
    start = int(profiles.starts[b])
    # bytes as they are; the unreadable step carries the previous value, as utilization does
    assert gib[start : start + 4].tolist() == [8.0, 8.0, 13.0, 8.0]


def test_a_source_without_per_pod_memory_writes_no_memory_file(tmp_path):
    export = build_export(_read(None), VIEW, STEP)
    paths = write_export(export, tmp_path)

    assert export.memory is None and "memory" not in paths
    assert not (tmp_path / "memory.csv").exists()
    assert export.nodes["gpu_memory_mib"].tolist() == [20480.0]  # the device series still tell


def test_an_exporter_that_served_no_pod_memory_writes_no_memory_file_and_says_so(tmp_path):
    export = build_export(_read(MEMORY.iloc[0:0]), VIEW, STEP)

    assert export.memory is None and "memory" not in write_export(export, tmp_path)
    assert export.problems == ("no gpu_pod_memory_used_bytes samples in the window: no memory.csv",)


def test_a_pod_with_utilization_and_no_memory_is_named():
    export = build_export(_read(MEMORY[MEMORY["pod"] == "a"]), VIEW, STEP)

    assert len(export.problems) == 1 and "e.g. s/b" in export.problems[0]


@pytest.mark.parametrize(
    ("cells", "expected"),
    [([20480, None], (20.0, None)), ([None, None], (None, None))],
    ids=["one-empty", "all-empty"],
)
def test_an_empty_device_memory_cell_leaves_the_node_to_its_model(cells, expected):
    nodes = parse_nodes(pd.DataFrame({"sn": ["x", "y"], "gpu": [1, 1], "gpu_memory_mib": cells}))

    assert nodes.measured_memory
    assert (nodes.memory(0), nodes.memory(1)) == expected


@pytest.mark.parametrize("cell", ["lots", 0, -1], ids=["text", "zero", "negative"])
def test_a_bad_device_memory_cell_is_refused(cell):
    frame = pd.DataFrame({"sn": ["x"], "gpu": [1], "gpu_memory_mib": [cell]})

    with pytest.raises(TraceError, match="gpu_memory_mib"):
        parse_nodes(frame)


def test_a_node_list_without_device_memory_is_not_measured():
    nodes = parse_nodes(pd.DataFrame({"sn": ["x"], "gpu": [1]}))

    assert not nodes.measured_memory and nodes.memory(0) is None
