"""A Kueue cluster end to end: a day of history in a real Prometheus, the cluster in the fake API
server with Kueue's controllers played by `fakeapi.kueue`, each cycle a `gpu-reclaimer run --once
--apply` process of its own speaking through the real client.

The world is `kube.kueue_objects`: ClusterQueue `research` runs the idle job `idle` and the busy
job `busy` (two of their four GPUs borrowed from its cohort), guaranteed-by-quota `prod` runs the
idle `serve`, and `team-b`'s `llm` waits for quota. The idle job is stopped the Kueue way, by
deactivating its Workload: Kueue evicts it, suspends the Job, releases the quota and admits
`llm`, whose pods then wait for the GPUs the idle job's terminating pods still hold: that room
is in flight, and nothing else is stopped for it. Once the busy job has finished, the idle one is
reactivated. The reclaimer writes nothing but the idle Workload (and its Events).
"""

from __future__ import annotations

import io
import json
from contextlib import redirect_stdout
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import yaml
from fakeapi import FakeCluster
from kueue_objects import NODE, kueue_world
from promserver import PromServer, openmetrics
from runonce import applied_once, run_once

import gpu_contract as gc
from e2e.starved_world import ts
from reclaimer.cli import main

pytestmark = [pytest.mark.prometheus, pytest.mark.slow]
HISTORY_S = 24 * 3600
IDLE, BUSY, SERVE, PENDING = "research/idle", "research/busy", "prod/serve", "team-b/llm"
WLS = ("kueue.x-k8s.io", "v1beta2", "workloads")
JOBS = ("batch", "v1", "jobs")
PODS = ("", "v1", "pods")
LEVELS = {"idle": 0.0, "busy": 0.8, "serve": 0.0}


def world_history(now: float) -> str:
    times = np.arange(now - HISTORY_S, now - 15.0, 60.0)
    series = []
    for k, (job, level) in enumerate(LEVELS.items()):
        ns = "prod" if job == "serve" else "research"
        for i in range(2):
            lab = {
                "namespace": ns,
                "pod": f"{job}-{i}",
                "container": "main",
                "gpu": str(2 * k + i),
                "Hostname": NODE,
                "UUID": f"GPU-{job}-{i}",
            }
            series.append((gc.POD_UTILIZATION, lab, [(float(t), level) for t in times]))
            series.append((gc.POD_ALLOCATED, lab, [(float(t), 1.0) for t in times]))
    return openmetrics(series)


def world_objects(now: float) -> list[dict[str, Any]]:
    return kueue_world("v1beta2")


def _actions(report: dict[str, Any]) -> list[tuple[str, str]]:
    return [(a["kind"], a["target"]) for a in report["plan"]["actions"]]


def _skips(report: dict[str, Any]) -> dict[str, str]:
    return {s["target"]: s["reason"] for s in report["plan"]["skipped"]}


def _wl(cluster: FakeCluster, job: str) -> dict[str, Any]:
    ns, name = job.split("/")
    found = cluster.get(*WLS, f"job-{name}-1a2b3", ns)
    assert found is not None
    return found


def _true(obj: dict[str, Any], kind: str) -> bool:
    return any(
        c["type"] == kind and c["status"] == "True" for c in obj["status"].get("conditions", [])
    )


def _pods(cluster: FakeCluster, job: str) -> list[dict[str, Any]]:
    ns, name = job.split("/")
    return [
        p
        for p in cluster.all(*PODS)
        if p["metadata"]["namespace"] == ns and p["metadata"]["labels"].get("job-name") == name
    ]


def _schedule(cluster: FakeCluster, job: str, now: float) -> None:
    """As kube-scheduler: bind the job's waiting pods to the node, and start them."""
    with cluster.lock:
        for p in _pods(cluster, job):
            if not p["spec"].get("nodeName"):
                p["spec"]["nodeName"] = NODE
                p["status"] = {"phase": "Running", "startTime": ts(now)}


def _finish(cluster: FakeCluster, job: str, now: float) -> None:
    """The job completes: its pods end, its Job and its Workload say Finished."""
    ns, name = job.split("/")
    with cluster.lock:
        for p in _pods(cluster, job):
            del cluster.objects[PODS][(ns, p["metadata"]["name"])]
        done = {"status": "True", "lastTransitionTime": ts(now)}
        cluster.get(*JOBS, name, ns)["status"] = {"conditions": [{"type": "Complete", **done}]}
        _wl(cluster, job)["status"]["conditions"].append({"type": "Finished", **done})


def test_an_idle_kueue_job_is_deactivated_for_a_starved_cluster_queue_and_reactivated_later(
    prom: PromServer, kubeconfig: Path, cluster: FakeCluster, now: float
) -> None:
    first = applied_once(prom.url, kubeconfig)
    assert _actions(first) == [("preempt", IDLE)]
    assert first["plan"]["actions"][0]["evidence"]["for_pending"] == PENDING
    assert [o["outcome"] for o in first["outcomes"]] == ["applied"], first["outcomes"]
    idle_wl = _wl(cluster, IDLE)
    assert idle_wl["spec"]["active"] is False
    assert idle_wl["metadata"]["annotations"]["gpu-reclaim.io/room-for"] == PENDING
    # Kueue's part: the Job suspended, its pods terminating, the quota handed to llm
    assert cluster.get(*JOBS, "idle", "research")["spec"]["suspend"] is True
    assert all(p["metadata"].get("deletionTimestamp") for p in _pods(cluster, IDLE))
    assert _true(_wl(cluster, PENDING), "QuotaReserved")
    assert [p["spec"].get("nodeName") for p in _pods(cluster, PENDING)] == [None, None]

    # llm's pods wait for the GPUs the idle job's pods still hold: room in flight, no new stop
    second = applied_once(prom.url, kubeconfig)
    assert _actions(second) == []
    assert _skips(second)[PENDING] == "RoomInFlight"

    # the kubelet ends the idle pods, llm's are bound; later the busy job completes and the
    # idle job's cool-down has passed: there is room for it again
    assert cluster.finish_termination("research") == 2
    _schedule(cluster, PENDING, now)
    _finish(cluster, BUSY, now)
    with cluster.lock:
        idle_wl = _wl(cluster, IDLE)
        idle_wl["metadata"]["annotations"]["gpu-reclaim.io/suspended-at"] = ts(now - 3600)
    third = applied_once(prom.url, kubeconfig)
    assert _actions(third) == [("resume", IDLE)]
    assert [o["outcome"] for o in third["outcomes"]] == ["applied"], third["outcomes"]
    idle_wl = _wl(cluster, IDLE)
    assert idle_wl["spec"]["active"] is True
    assert "gpu-reclaim.io/suspended-by" not in idle_wl["metadata"]["annotations"]
    assert _true(idle_wl, "QuotaReserved")  # Kueue requeued and admitted it again
    assert cluster.get(*JOBS, "idle", "research")["spec"]["suspend"] is False

    # all the reclaimer wrote: the idle Workload's spec.active and record, and its Events
    writes = [(w.method, w.path) for w in cluster.writes() if "/events" not in w.path]
    patch = ("PATCH", "/apis/kueue.x-k8s.io/v1beta2/namespaces/research/workloads/job-idle-1a2b3")
    assert writes == [patch, patch]
    assert all(w.body["spec"].keys() == {"active"} for w in cluster.writes() if w.method == "PATCH")
    assert cluster.get(*JOBS, "serve", "prod")["spec"]["suspend"] is False
    assert _wl(cluster, SERVE)["spec"]["active"] is True


def test_a_dump_of_the_kueue_cluster_plans_offline_as_the_live_cluster(
    prom: PromServer, kubeconfig: Path, cluster: FakeCluster, now: float, tmp_path: Path
) -> None:
    dump = tmp_path / "cluster.yaml"
    dump.write_text(
        yaml.safe_dump({"apiVersion": "v1", "kind": "List", "items": world_objects(now)})
    )
    out = io.StringIO()
    with redirect_stdout(out):
        code = main(
            ["run", "--once", "--json", "--prometheus-url", prom.url, "--cluster-file", str(dump)]
        )
    assert code == 0
    offline = json.loads(out.getvalue())
    code, live = run_once(prom, kubeconfig)  # dry-run: the same cluster, read live
    assert code == 0
    assert _actions(offline) == _actions(live) == [("preempt", IDLE)]
    assert _skips(offline) == _skips(live)
    assert offline["plan"]["actions"][0]["evidence"]["for_pending"] == PENDING
    assert cluster.get(*WLS, "job-idle-1a2b3", "research")["spec"]["active"] is True
