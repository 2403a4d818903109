"""`export-history` reads a Kubeflow Trainer v2 TrainJob's pods (pod -> Job -> JobSet -> TrainJob)
as the TrainJob's one job: each pod is exported on the TrainJob's queue, from the cluster."""

from __future__ import annotations

import numpy as np
import pandas as pd
from kube.workload_objects import world

from reclaimer.kube.objects.convert import group_by_kind, to_cluster_view
from reclaimer.prometheus.arrivals import none_found
from reclaimer.prometheus.window import WindowRead
from reclaimer.simulate.export import build_export

STEP, T0 = 60.0, 1.7e9
PODS = ("finetune-node-0-0", "finetune-node-0-1")


def _read() -> WindowRead:
    history = pd.concat(
        [
            pd.DataFrame(
                {"namespace": "team", "pod": p, "timestamp": T0 + STEP * np.arange(3), "value": 0.0}
            )
            for p in PODS
        ],
        ignore_index=True,
    )
    return WindowRead(
        pods=history,
        placements={},
        node_gpus={"gpu-node-1": 2},
        queues={},
        arrivals=none_found(T0, T0 + 10 * STEP),
        recorded=False,
        requests=1,
        problems=(),
    )


def test_a_trainjobs_pods_are_exported_on_the_trainjobs_queue() -> None:
    objs = [o for o in world("TrainJob") if o["kind"] != "PodGroup"]  # no Volcano PodGroup
    objs[1]["metadata"]["annotations"] = {}  # nor the runtime's queue on the JobSet
    patch = {"template": {"metadata": {"annotations": {"scheduling.volcano.sh/queue-name": "tj"}}}}
    objs[0]["spec"]["runtimePatches"] = [{"manager": "me", "trainingRuntimeSpec": patch}]
    queue = {"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "Queue"}
    objs.append({**queue, "metadata": {"name": "tj"}, "spec": {"reclaimable": True}})
    view = to_cluster_view(group_by_kind(objs)[0], taken_at=T0)
    assert [j.kind.value for j in view.jobs] == ["TrainJob"]

    export = build_export(_read(), view, STEP)
    pods = export.pods.set_index("name")
    for p in PODS:
        assert pods.loc[f"team/{p}", ["qos", "reclaimable"]].tolist() == ["tj", "true"]
    assert export.queue_sources == {"cluster": 2}
