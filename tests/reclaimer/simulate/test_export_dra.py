"""`export-history` reads jobs whose GPUs come from DRA like any other: their pods' GPUs from
their claims, the node's from its ResourceSlices, written as a trace `simulate` reads back and
replays."""

from __future__ import annotations

import numpy as np
import pandas as pd
from dra_world import dra_objects

from reclaimer.kube.objects.convert import group_by_kind, to_cluster_view
from reclaimer.prometheus.arrivals import none_found
from reclaimer.prometheus.window import WindowRead
from reclaimer.simulate.export import build_export, write_export
from reclaimer.simulate.jobs import EventKind
from reclaimer.simulate.replay import simulate
from reclaimer.simulate.settings import SimSettings
from reclaimer.simulate.strategies import Strategy
from reclaimer.simulate.trace import read_nodes, read_pods, read_profiles

STEP = 60.0
T0 = 1.7e9


def _read() -> WindowRead:
    rows = {"notebook-master-0": [0.0, 0.0, 0.0], "train-master-0": [0.8, 0.9, 0.7]}
    history = pd.concat(
        [
            pd.DataFrame(
                {
                    "namespace": "research",
                    "pod": pod,
                    "timestamp": T0 + STEP * np.arange(len(values)),
                    "value": values,
                }
            )
            for pod, values in rows.items()
        ],
        ignore_index=True,
    )
    return WindowRead(
        pods=history,
        placements={},
        node_gpus={},
        queues={},
        arrivals=none_found(T0, T0 + 10 * STEP),
        recorded=False,
        requests=1,
        problems=(),
    )


def test_dra_pods_and_nodes_are_exported_with_their_gpus(tmp_path):
    objs, _ = group_by_kind(dra_objects(T0))
    view = to_cluster_view(objs, T0)
    export = build_export(_read(), view, STEP)
    pods = export.pods.set_index("name")
    assert pods.loc["research/notebook-master-0", ["qos", "reclaimable", "num_gpu"]].tolist() == [
        "research",
        "true",
        2,
    ]
    assert pods.loc["research/train-master-0", "num_gpu"] == 2
    assert list(zip(export.nodes["sn"], export.nodes["gpu"], strict=True)) == [("gpu-node-1", 4)]

    paths = write_export(export, tmp_path / "out")
    jobs, nodes = read_pods(paths["pods"]), read_nodes(paths["nodes"])
    assert set(jobs.names) == {"research/notebook-master-0", "research/train-master-0"}
    assert nodes.gpus.sum() == 4

    seen: list[tuple[str, EventKind]] = []
    simulate(
        jobs,
        nodes,
        read_profiles(paths["utilization"]),
        SimSettings(strategy=Strategy.NONE),
        on_event=lambda e: seen.append((jobs.names[e.job], e.kind)),
    )
    started = sorted(name for name, kind in seen if kind is EventKind.STARTED)
    assert started == ["research/notebook-master-0", "research/train-master-0"]  # both fit
