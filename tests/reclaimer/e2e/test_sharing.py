"""Sharing end to end: guaranteed jobs stay whole under time-slicing.

Each cycle is its own `gpu-reclaimer run --once --apply` process, speaking through the real
`kubernetes` client to the stateful fake API server, with a real Prometheus holding 15 days of
device load and a day of per-pod readings (`share_world`).

- Contention relief: the busy reclaimable job time-sliced on the GPU of a busy guaranteed one is
  suspended `ContentionRelief`, with an Event saying whom it protects; the guaranteed job is never
  stopped, in that cycle or the next process's, and the next process does not resume the stopped
  job into its only room, beside the still busy guaranteed job (`ContentionWouldReturn`).
- Raise gates: of four idle time-sliced nodes only the one with memory headroom (by the week's
  pods' memory peaks, read from Prometheus) and a quiet outlook is raised; the others are
  refused `NoMemoryHeadroom`, `NoLoadHistory` and
  `LoadForecastHigh`, each with a Normal Event on its node. The contended node, whose guaranteed
  pod was busy beside its neighbour all day, is lowered `GuaranteedPodsContend` in that cycle.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest
from fakeapi import FakeCluster
from promserver import PromServer
from runonce import applied_once
from share_world import (
    CONTENDED,
    GUARANTEED,
    RAISE_NODES,
    RECLAIMABLE,
    cluster_objects,
    history,
    ts,
)

PYT = ("kubeflow.org", "v1", "pytorchjobs")
pytestmark = [pytest.mark.prometheus, pytest.mark.slow]
# the world the conftest's fixtures build (prom: history(now); cluster: cluster_objects(now))
world_history = history
world_objects = cluster_objects


def cycle(prom_url: str, kubeconfig: Path) -> dict[str, Any]:
    """One `run --once --apply --json` in a process of its own: its report."""
    return applied_once(prom_url, kubeconfig)


def _suspended(cluster: FakeCluster, key: str) -> bool:
    ns, name = key.split("/")
    job = cluster.get(*PYT, name, ns)
    return bool(job["spec"].get("runPolicy", {}).get("suspend"))


def _actions(report: dict[str, Any], kind: str) -> list[tuple[str, str]]:
    return [(a["target"], a["reason"]) for a in report["plan"]["actions"] if a["kind"] == kind]


def test_contention_relief_stops_the_reclaimable_job_never_the_guaranteed_one(
    prom: PromServer, kubeconfig: Path, cluster: FakeCluster
) -> None:
    for node in RAISE_NODES:  # no room anywhere but the contended GPU
        cluster.delete(("", "v1", "nodes"), "", node, False)
    first = cycle(prom.url, kubeconfig)
    assert _actions(first, "preempt") == [(RECLAIMABLE, "ContentionRelief")]
    assert _suspended(cluster, RECLAIMABLE) and not _suspended(cluster, GUARANTEED)
    notes = cluster.get(*PYT, "tune", "research")["metadata"]["annotations"]
    assert notes["gpu-reclaim.io/suspend-reason"] == "ContentionRelief"
    (event,) = [e for e in cluster.all("", "v1", "events") if e["involvedObject"]["name"] == "tune"]
    assert event["reason"] == "GpuReclaimPreempted" and "ContentionRelief" in event["message"]
    assert f"time-sliced with guaranteed {GUARANTEED}" in event["message"]
    assert f"GPU-{CONTENDED}" in event["message"]

    # its operator removes the pod; an hour on, the job's cool-down is over
    cluster.delete(("", "v1", "pods"), "research", "tune-master-0", False)
    cluster.finish_termination("research", "tune-master-0")  # the kubelet is done with it
    notes["gpu-reclaim.io/suspended-at"] = ts(time.time() - 3600)
    second = cycle(prom.url, kubeconfig)  # a new process: it knows only what the cluster says
    assert _actions(second, "preempt") == [] and _actions(second, "resume") == []
    assert not _suspended(cluster, GUARANTEED) and _suspended(cluster, RECLAIMABLE)
    held = {s["target"]: s for s in second["plan"]["skipped"]}[RECLAIMABLE]
    assert held["reason"] == "ContentionWouldReturn"  # its only room is beside prod/train
    assert CONTENDED in held["detail"]


def test_only_a_node_with_headroom_and_a_quiet_outlook_is_raised(
    prom: PromServer, kubeconfig: Path, cluster: FakeCluster
) -> None:
    report = cycle(prom.url, kubeconfig)
    reshaped = {
        a["target"]: (a["from_replicas"], a["to_replicas"], a["reason"])
        for a in report["plan"]["actions"]
        if a["kind"] == "reshape"
    }
    assert reshaped == {
        "gpu-ts-ok": (2, 4, "NodeUnderused"),
        CONTENDED: (2, 1, "GuaranteedPodsContend"),
    }
    skipped = {s["target"]: s for s in report["plan"]["skipped"]}
    assert skipped["gpu-ts-mem"]["reason"] == "NoMemoryHeadroom"
    mem = skipped["gpu-ts-mem"]["detail"]  # the week's peaks, read from Prometheus
    assert "each pod may come to hold 3.0 GiB (the pods' 99% memory peak)" in mem
    assert "has 1 pod(s) budgeted 10.0 GiB (2.8 used)" in mem
    assert skipped["gpu-ts-new"]["reason"] == "NoLoadHistory"
    assert skipped["gpu-ts-peak"]["reason"] == "LoadForecastHigh"
    assert "within 8h" in skipped["gpu-ts-peak"]["detail"]
    refused = {
        e["involvedObject"]["name"]: e
        for e in cluster.all("", "v1", "events")
        if e["reason"] == "GpuReclaimRaiseRefused"
    }
    assert sorted(refused) == ["gpu-ts-mem", "gpu-ts-new", "gpu-ts-peak"]
    assert refused["gpu-ts-peak"]["message"].startswith("LoadForecastHigh: would raise 2 -> 4")
    assert refused["gpu-ts-mem"]["type"] == "Normal"
    assert refused["gpu-ts-mem"]["involvedObject"]["kind"] == "Node"
