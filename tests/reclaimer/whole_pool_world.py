"""A pool installed whole: one 16 GiB T4 at 1 replica, labelled into the managed pool, whose
pods' week peaks say four fit it, and 15 days of quiet load, for the end-to-end raise from 1.

- gpu-pool-16 (one 16 GiB T4, no device-plugin config label: it runs without time-slicing;
  `gpu-reclaim.io/time-slicing-pool: "true"`): `prod/infer-0` holds its GPU, 3 GiB now.
- The device plugin's ConfigMap (`gpu-operator/time-slicing-config`) holds no key yet.
- The week's peaks: infer-0 and 12 `batch` pods of three days ago, each at 3 GiB: a slot is
  budgeted at 3 GiB, and four (12 GiB) stay within the raise's 90% headroom (14.4 GiB).
- The GPU's utilization: 10% for 15 days (every 10 minutes; every 30 s over the last 20
  minutes), which the load outlook (`LOAD_DAYS`) reads hourly: underused, and staying so.
- The day's per-pod utilization: infer-0's 20 minutes, and 12 `batch` pods idle for 3 hours
  elsewhere (`contention_world.idle_pods`): the fleet is busy under 1% of its time, so pods let
  in beside infer-0 would rarely meet it busy, and the contention rule lets the raise to 4 by.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from budget_world import DAY, MIB, gpu_node, gpu_pod, ts_config, volcano_queue
from contention_world import idle_pods
from promserver import openmetrics

import gpu_contract as gc

NODE, POD = "gpu-pool-16", "prod/infer-0"
ENDED = 12
POOL_LABEL = "gpu-reclaim.io/time-slicing-pool"


def cluster_objects(now: float) -> list[dict[str, Any]]:
    queue = volcano_queue("prod", 1, reclaimable=False)
    node = gpu_node(NODE, replicas=1, labels={POOL_LABEL: "true"})
    return [queue, ts_config({}), node, gpu_pod(POD, NODE, now)]


def history(now: float) -> str:
    dev = {"gpu": "0", "UUID": f"GPU-{NODE}", "Hostname": NODE}
    old = np.arange(now - 15 * DAY, now - 1200, 600.0)
    times = [float(t) for t in np.concatenate([old, np.arange(now - 1200, now - 15.0, 30.0)])]
    recent = [t for t in times if t >= now - 1200]
    model = dev | {"modelName": "Tesla T4"}
    ns, name = POD.split("/")
    own = {"namespace": ns, "pod": name, "container": "main", **dev}
    series = [
        (gc.DCGM_GPU_UTIL, model, [(t, 10.0) for t in times]),
        (gc.DCGM_FB_USED, model, [(t, 3 * 1024.0) for t in recent]),
        (gc.DCGM_FB_FREE, model, [(t, 13 * 1024.0) for t in recent]),
        (gc.POD_ALLOCATED, own, [(t, 1.0) for t in recent]),
        (gc.POD_UTILIZATION, own, [(t, 0.1) for t in recent]),
        (gc.POD_MEMORY, own, [(t, 3 * 1024 * MIB) for t in recent]),
    ]
    ran = [float(t) for t in np.arange(now - 3 * DAY, now - 3 * DAY + 600, 60)]
    for k in range(ENDED):
        lab = {"namespace": "batch", "pod": f"done-{k}", "container": "main", **dev}
        series.append((gc.POD_MEMORY, lab, [(t, 3 * 1024 * MIB) for t in ran]))
    return openmetrics([*series, *idle_pods(now, 12, 3.0)])
