"""Cluster read benchmark (not a test): one snapshot of a large synthetic cluster.

    .venv/bin/python bench/kube_read_bench.py [--jobs 2500] [--pods-per-job 4] [--nodes 1250]

Builds PyTorchJobs (half of them), Volcano Jobs (the other half) with their PodGroups and pods,
bare notebook pods, GPU nodes and Volcano queues as plain dicts, then times
1. the pure converter `to_cluster_view` on them, and
2. the whole live read (`read_cluster_sync`: paged lists through the real `kubernetes` client
   over loopback HTTP from the fake API server of the tests, JSON decode, convert).
The fake server runs in this process, so (2) includes its JSON encoding on the same cores.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))
# the repo root before tests/: tests/reclaimer/ would otherwise shadow the reclaimer package
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from fakeapi import FakeApiServer, FakeCluster
from kubernetes import client as k8s

from reclaimer.kube.client import api_from_configuration
from reclaimer.kube.objects.convert import ClusterObjects, group_by_kind, to_cluster_view
from reclaimer.kube.read import read_cluster_sync


def _pod(ns: str, name: str, node: str, owner: dict[str, Any] | None, pg: str) -> dict[str, Any]:
    meta: dict[str, Any] = {
        "name": name,
        "namespace": ns,
        "uid": f"uid-{ns}-{name}",
        "annotations": {"scheduling.k8s.io/group-name": pg},
    }
    if owner:
        meta["ownerReferences"] = [owner]
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": meta,
        "spec": {
            "nodeName": node,
            "containers": [
                {"name": "c", "resources": {"limits": {"nvidia.com/gpu": "1", "cpu": "4"}}}
            ],
        },
        "status": {"phase": "Running", "startTime": "2026-11-29T10:00:00Z"},
    }


def _job(i: int, per_job: int, nodes: int) -> list[dict[str, Any]]:
    ns, name = f"team-{i % 50}", f"job-{i}"
    template = {
        "spec": {"containers": [{"name": "c", "resources": {"limits": {"nvidia.com/gpu": "1"}}}]}
    }
    if i % 2:
        job = {
            "apiVersion": "kubeflow.org/v1",
            "kind": "PyTorchJob",
            "metadata": {"name": name, "namespace": ns, "uid": f"u{i}"},
            "spec": {
                "runPolicy": {"schedulingPolicy": {"queue": f"q{i % 10}"}},
                "pytorchReplicaSpecs": {"Worker": {"replicas": per_job, "template": template}},
            },
        }
    else:
        job = {
            "apiVersion": "batch.volcano.sh/v1alpha1",
            "kind": "Job",
            "metadata": {"name": name, "namespace": ns, "uid": f"u{i}"},
            "spec": {
                "queue": f"q{i % 10}",
                "minAvailable": per_job,
                "tasks": [{"name": "t", "replicas": per_job, "template": template}],
            },
            "status": {"state": {"phase": "Running"}},
        }
    owner = {
        "apiVersion": job["apiVersion"],
        "kind": job["kind"],
        "name": name,
        "controller": True,
        "uid": f"u{i}",
    }
    pg = {
        "apiVersion": "scheduling.volcano.sh/v1beta1",
        "kind": "PodGroup",
        "metadata": {"name": name, "namespace": ns, "ownerReferences": [owner]},
        "spec": {"minMember": per_job, "queue": f"q{i % 10}"},
        "status": {"phase": "Running" if i % 7 else "Inqueue"},
    }
    pods = [
        _pod(ns, f"{name}-{k}", f"node-{(i * per_job + k) % nodes}", owner, name)
        for k in range(per_job)
    ]
    return [job, pg, *pods]


def build(jobs: int, per_job: int, nodes: int) -> list[dict[str, Any]]:
    objs: list[dict[str, Any]] = []
    for i in range(jobs):
        objs += _job(i, per_job, nodes)
    objs += [
        {
            "apiVersion": "scheduling.volcano.sh/v1beta1",
            "kind": "Queue",
            "metadata": {"name": f"q{q}"},
            "spec": {"weight": 1 + q},
        }
        for q in range(10)
    ]
    objs += [
        {
            "apiVersion": "v1",
            "kind": "Node",
            "metadata": {"name": f"node-{n}"},
            "status": {"capacity": {"nvidia.com/gpu": "8"}},
        }
        for n in range(nodes)
    ]
    return objs


def _timed(fn: Any, repeat: int) -> list[float]:
    out = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        out.append(time.perf_counter() - t0)
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--jobs", type=int, default=2500)
    ap.add_argument("--pods-per-job", type=int, default=4)
    ap.add_argument("--nodes", type=int, default=1250)
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    objs = build(args.jobs, args.pods_per_job, args.nodes)
    grouped, _ = group_by_kind(objs)
    view = to_cluster_view(grouped, 0.0)
    conv = _timed(lambda: to_cluster_view(ClusterObjects(**grouped.__dict__), 0.0), args.repeat)
    cluster = FakeCluster()
    cluster.add(*objs)
    srv = FakeApiServer(cluster).start()
    try:
        api = api_from_configuration(k8s.Configuration(host=srv.url), timeout=60)
        live = _timed(lambda: read_cluster_sync(api, 0.0), args.repeat)
        requests = len(cluster.requests) // args.repeat
        api.close()
    finally:
        srv.stop()
    print(
        f"cluster: {len(view.jobs)} jobs, {len(view.pods)} pods, {len(view.nodes)} nodes, "
        f"{len(view.pending)} pending"
    )
    print(f"convert (pure):   median {statistics.median(conv) * 1000:.0f} ms")
    print(f"live read total:  median {statistics.median(live) * 1000:.0f} ms, {requests} requests")
    return 0


if __name__ == "__main__":
    sys.exit(main())
