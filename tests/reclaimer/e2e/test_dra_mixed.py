"""A mixed cluster end to end: a DRA node and a device-plugin node side by side, each `run
--once` its own process against the fake API server and a real Prometheus.

gpu-node-1 gives its 4 GPUs through DRA (`dra_world`): research's idle `notebook` and busy
`train` hold 2 each through claims. gpu-node-2 gives 2 `nvidia.com/gpu` through the device
plugin, both held by research's idle bare pod `scratch`. A job waiting for GPUs through a claim
can only be given DRA GPUs, and one asking for `nvidia.com/gpu` only device-plugin ones: each is
given the idle job holding the kind it asks for, never the other.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest
from dra_world import mixed_objects
from fakeapi import FakeCluster
from fakeapi import resourceclaims as rc
from promserver import openmetrics
from safety_world import HISTORY_S, IDLE, PENDING, POLICY, ts

import gpu_contract as gc
from e2e.test_safety import cycle, preempted, skips

pytestmark = [pytest.mark.prometheus, pytest.mark.slow]
SCRATCH = "research/scratch"
# pod -> (node, first GPU index, utilization over the day)
PODS = {
    "notebook-master-0": ("gpu-node-1", 0, 0.0),
    "train-master-0": ("gpu-node-1", 2, 0.8),
    "scratch": ("gpu-node-2", 0, 0.0),
}


def world_history(now: float) -> str:
    times = np.arange(now - HISTORY_S, now - 15.0, 60.0)
    series = []
    for pod, (node, first, level) in PODS.items():
        for gpu in (first, first + 1):
            lab = {
                "namespace": "research",
                "pod": pod,
                "container": "main",
                "gpu": str(gpu),
                "Hostname": node,
                "UUID": f"GPU-{node}-{gpu}",
            }
            series.append((gc.POD_UTILIZATION, lab, [(float(t), level) for t in times]))
            series.append((gc.POD_ALLOCATED, lab, [(float(t), 1.0) for t in times]))
    return openmetrics(series)


def _plugin_pending(now: float) -> dict[str, Any]:
    """prod's job asking for 2 `nvidia.com/gpu` instead of a claim."""
    limits = {"nvidia.com/gpu": "2"}
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": "llm-master-0",
            "namespace": "prod",
            "uid": "33333333-0000-0000-0000-00000000000c",
            "creationTimestamp": ts(now - 1800),
            "annotations": {"scheduling.k8s.io/group-name": "llm"},
        },
        "spec": {
            "containers": [{"name": "main", "image": "llm:1", "resources": {"limits": limits}}]
        },
        "status": {"phase": "Pending"},
    }


def world_objects(now: float) -> list[dict[str, Any]]:
    return mixed_objects(now)


@pytest.mark.parametrize(
    ("asks", "taken", "kept"),
    [
        pytest.param("claim", IDLE, SCRATCH, id="dra-demand-takes-the-dra-job"),
        pytest.param("nvidia.com/gpu", SCRATCH, IDLE, id="plugin-demand-takes-the-plugin-pod"),
    ],
)
def test_each_demand_takes_the_idle_job_holding_its_kind_of_gpu(
    prom: Any,
    kubeconfig: Path,
    cluster: FakeCluster,
    tmp_path: Path,
    now: float,
    asks: str,
    taken: str,
    kept: str,
) -> None:
    if asks != "claim":
        cluster.add(_plugin_pending(now))  # replaces the pod that asked through a claim
    rc.reconcile(cluster)
    policy = tmp_path / "policy.yaml"
    policy.write_text(POLICY)
    code, report, err = cycle(prom.url, kubeconfig, "--apply", "--policy-file", str(policy))
    assert code == 0, err
    assert preempted(report) == [taken]
    assert report["plan"]["actions"][0]["evidence"]["for_pending"] == PENDING
    assert skips(report)[kept] == "NoStarvedDemand", skips(report)
    assert skips(report)["gpu-node-1"] == "DraDevices"
