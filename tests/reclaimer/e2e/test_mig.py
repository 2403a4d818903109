"""MIG reclaim end to end: a day of history in a real Prometheus, a MIG node in the fake API
server, `gpu-reclaimer run --once --apply` through the real client.

gpu-mig-1 is one MIG GPU (mixed strategy) offering two `nvidia.com/mig-1g.10gb` instances and one
`nvidia.com/mig-3g.40gb`, all held by bare pods of the reclaimable queue `research`: one small
instance idle for a day, the other two busy. gpu-whole-1 has one whole GPU, held by a busy pod.
A bare pod of the guaranteed queue `prod` waits: the idle pod is evicted for it when it asks for
the same profile, and for nothing else.
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from fakeapi import FakeCluster, served_kubeconfig
from promserver import PromServer, openmetrics, start_prometheus
from runonce import run_once

import gpu_contract as gc

pytestmark = [pytest.mark.prometheus, pytest.mark.slow]
HISTORY_S = 24 * 3600
SMALL, BIG, GPU = "nvidia.com/mig-1g.10gb", "nvidia.com/mig-3g.40gb", "nvidia.com/gpu"
# pod -> (node, resource it asks for, GPU instance id, utilization over the day)
RUNNING = {
    "idle-small": ("gpu-mig-1", SMALL, "7", 0.0),
    "busy-small": ("gpu-mig-1", SMALL, "8", 0.8),
    "busy-big": ("gpu-mig-1", BIG, "2", 0.8),
    "busy-whole": ("gpu-whole-1", GPU, "", 0.8),
}


def _ts(t: float) -> str:
    return datetime.fromtimestamp(t, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


@pytest.fixture(scope="module")
def prom(tmp_path_factory: pytest.TempPathFactory, now: float) -> Iterator[PromServer]:
    times = np.arange(now - HISTORY_S, now - 15.0, 60.0)
    series = []
    for pod, (node, _, instance, level) in RUNNING.items():
        lab = {
            "namespace": "research",
            "pod": pod,
            "container": "main",
            "gpu": "0",
            "Hostname": node,
            "UUID": f"GPU-{node}",
            **({"GPU_I_ID": instance} if instance else {}),
        }
        series.append((gc.POD_UTILIZATION, lab, [(float(t), level) for t in times]))
        series.append((gc.POD_ALLOCATED, lab, [(float(t), 1.0) for t in times]))
    work = tmp_path_factory.mktemp("prom")
    with start_prometheus(work, history=openmetrics(series), carry_on=True) as s:
        yield s


def _pod(name: str, ns: str, resource: str, node: str | None, created: float) -> dict[str, Any]:
    spec: dict[str, Any] = {
        "containers": [{"name": "main", "image": "m:1", "resources": {"limits": {resource: "1"}}}]
    }
    status: dict[str, Any] = {"phase": "Pending"}
    if node is not None:
        spec["nodeName"] = node
        status = {"phase": "Running", "startTime": _ts(created + 30)}
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": name,
            "namespace": ns,
            "uid": f"uid-{ns}-{name}",
            "creationTimestamp": _ts(created),
            "annotations": {"scheduling.volcano.sh/queue-name": ns},
        },
        "spec": spec,
        "status": status,
    }


def _node(name: str, capacity: dict[str, str], labels: dict[str, str]) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": {"nvidia.com/gpu.count": "1", **labels}},
        "status": {"capacity": capacity, "allocatable": capacity},
    }


def _cluster(now: float, asks: str) -> FakeCluster:
    c = FakeCluster()
    for name, reclaimable in (("research", True), ("prod", False)):
        c.add(
            {
                "apiVersion": "scheduling.volcano.sh/v1beta1",
                "kind": "Queue",
                "metadata": {"name": name},
                "spec": {"deserved": {GPU: "2"}, "reclaimable": reclaimable},
                "status": {"state": "Open"},
            }
        )
    created = now - HISTORY_S - 3600
    c.add(
        _node("gpu-mig-1", {SMALL: "2", BIG: "1"}, {"nvidia.com/mig.strategy": "mixed"}),
        _node("gpu-whole-1", {GPU: "1"}, {}),
        *(_pod(p, "research", r, node, created) for p, (node, r, _, _) in RUNNING.items()),
        _pod("waiting", "prod", asks, None, now - 1800),
    )
    return c


@pytest.mark.parametrize(
    ("asks", "evicted"),
    [
        pytest.param(SMALL, ["research/idle-small"], id="same-profile"),
        pytest.param(BIG, [], id="other-profile"),
        pytest.param(GPU, [], id="whole-gpu"),
    ],
)
def test_an_idle_mig_pod_is_taken_only_for_its_profile(
    prom: PromServer, now: float, tmp_path: Path, asks: str, evicted: list[str]
) -> None:
    cluster = _cluster(now, asks)
    with served_kubeconfig(cluster, tmp_path / "kubeconfig") as kubeconfig:
        code, report = run_once(prom, kubeconfig, "--apply")
    assert code == 0, report["cycle"]
    actions = report["plan"]["actions"]
    assert [a["target"] for a in actions if a["kind"] == "preempt"] == evicted
    skips = {s["target"]: s for s in report["plan"]["skipped"]}
    if evicted:
        assert [o["outcome"] for o in report["outcomes"]] == ["applied"], report["outcomes"]
        assert f"frees 1 MIG instance ({SMALL})" in actions[0]["evidence"]["detail"]
        stored = cluster.get("", "v1", "pods", "idle-small", "research")
        assert stored is None or stored["metadata"].get("deletionTimestamp")
    else:
        assert skips["prod/waiting"]["reason"] == "FreedCapacityDoesNotFit", skips["prod/waiting"]
        assert asks in skips["prod/waiting"]["detail"]
        assert skips["research/idle-small"]["reason"] == "NoStarvedDemand"
        assert cluster.get("", "v1", "pods", "idle-small", "research") is not None
