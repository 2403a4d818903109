"""`export-history` reads the jobs Kueue admits: each pod on its job's ClusterQueue, from the
cluster, and reclaimable only where the ClusterQueue runs on borrowed quota alone."""

from __future__ import annotations

import numpy as np
import pandas as pd
from kueue_objects import kueue_world, pick

from reclaimer.kube.objects.convert import group_by_kind, to_cluster_view
from reclaimer.prometheus.arrivals import none_found
from reclaimer.prometheus.window import WindowRead
from reclaimer.simulate.export import build_export

STEP, T0 = 60.0, 1.7e9
PODS = ("research/idle-0", "research/busy-1", "prod/serve-0")


def _read() -> WindowRead:
    history = pd.concat(
        [
            pd.DataFrame(
                {
                    "namespace": p.split("/")[0],
                    "pod": p.split("/")[1],
                    "timestamp": T0 + STEP * np.arange(3),
                    "value": 0.0,
                }
            )
            for p in PODS
        ],
        ignore_index=True,
    )
    return WindowRead(
        pods=history,
        placements={},
        node_gpus={"gpu-node-1": 6},
        queues={},
        arrivals=none_found(T0, T0 + 10 * STEP),
        recorded=False,
        requests=1,
        problems=(),
    )


def test_kueue_jobs_pods_are_exported_on_their_cluster_queue() -> None:
    objs = kueue_world()
    research = pick(objs, "ClusterQueue", "research")  # all it runs is borrowed
    research["spec"]["resourceGroups"][0]["flavors"][0]["resources"][1]["nominalQuota"] = "0"
    export = build_export(_read(), to_cluster_view(group_by_kind(objs)[0], taken_at=T0), STEP)
    pods = export.pods.set_index("name")
    got = {p: pods.loc[p, ["qos", "reclaimable"]].tolist() for p in PODS}
    assert got == {
        "research/idle-0": ["research", "true"],
        "research/busy-1": ["research", "true"],
        "prod/serve-0": ["prod", "false"],  # its nominal quota is Kueue's promise to it
    }
    assert export.queue_sources == {"cluster": 3}
