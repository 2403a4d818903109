"""gpu-reclaimer's own writes, as admission requests: `FLOWS` run its real operations
(`kube.operations` for every stop and resume, `kube.reshaping`, `kube.lease`, the actuator's
Event recorder) through the real `kubernetes` client against the fake API server holding the
examples of deploy/examples (`kubewrites.serving`), and `run_flow` returns what the server
recorded, as admission sees it. The admission policy tests check the policies against exactly
these writes, and derive every forbidden request from one of them.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable
from pathlib import Path
from typing import Any

import yaml
from admission import Write
from fakeapi import FakeCluster
from kubewrites import Served, admitted, serving
from kueue_objects import cluster_queue, job, local_queue, workload

from reclaimer.kube import deactivation, forewarn, lease, operations, reshaping
from reclaimer.kube.client import KubeError
from reclaimer.kube.objects import resources as r
from reclaimer.kube.write import KubeWriter
from reclaimer.model import Job, JobKind, KueueWorkload
from reclaimer.runtime.actuator import KubeEventRecorder

Obj = dict[str, Any]
IDENTITY = "gpu-reclaimer-5d8f7c9b4-x2x7q"  # its pod name, the Lease holder and Event instance
NOW = 1_800_000_000.0
EXAMPLES = Path(__file__).resolve().parents[2] / "deploy" / "examples"


def _example(path: str) -> Obj:
    """The first object of an example file."""
    return next(d for d in yaml.safe_load_all((EXAMPLES / path).read_text("utf-8")) if d)


WORKLOAD_FILES = {
    JobKind.PYTORCH_JOB: "pytorchjob-research.yaml",
    JobKind.TF_JOB: "workloads/tfjob.yaml",
    JobKind.MPI_JOB: "workloads/mpijob.yaml",
    JobKind.XGBOOST_JOB: "workloads/xgboostjob.yaml",
    JobKind.PADDLE_JOB: "workloads/paddlejob.yaml",
    JobKind.JAX_JOB: "workloads/jaxjob.yaml",
    JobKind.NOTEBOOK: "workloads/notebook.yaml",
    JobKind.BATCH_JOB: "workloads/batch-job.yaml",
    JobKind.JOBSET: "workloads/jobset.yaml",
    JobKind.RAY_JOB: "workloads/rayjob.yaml",
    JobKind.TRAIN_JOB: "workloads/trainjob.yaml",
}
VOLCANO_JOB: Obj = {
    "apiVersion": "batch.volcano.sh/v1alpha1",
    "kind": "Job",
    "metadata": {"name": "sim-sweep", "namespace": "research"},
    "spec": {
        "minAvailable": 2,
        "queue": "research",
        "schedulerName": "volcano",
        "tasks": [
            {
                "name": "sim",
                "replicas": 2,
                "template": {
                    "spec": {
                        "containers": [
                            {
                                "name": "sim",
                                "image": "sim:1",
                                "resources": {"limits": {"nvidia.com/gpu": "1"}},
                            }
                        ]
                    }
                },
            }
        ],
    },
    "status": {"state": {"phase": "Running"}, "retryCount": 0},
}
BARE_POD: Obj = {
    "apiVersion": "v1",
    "kind": "Pod",
    "metadata": {"name": "debug-shell", "namespace": "team-a", "labels": {"app": "debug"}},
    "spec": {
        "nodeName": "gpu-node-1",
        "containers": [
            {
                "name": "shell",
                "image": "nvcr.io/nvidia/cuda:12.4.1-base-ubuntu22.04",
                "resources": {"limits": {"nvidia.com/gpu": "1"}},
            }
        ],
    },
    "status": {"phase": "Running"},
}
STALE_KEY = "gpu-reclaim-r8-0123456789"  # a key of an earlier reshape that no node uses now
GPU_NODE: Obj = {
    "apiVersion": "v1",
    "kind": "Node",
    "metadata": {
        "name": "gpu-node-1",
        "labels": {
            "kubernetes.io/hostname": "gpu-node-1",
            "nvidia.com/gpu.present": "true",
            "nvidia.com/device-plugin.config": "ts-2",
            "nvidia.com/gpu.replicas": "2",
        },
    },
    "spec": {
        "podCIDR": "10.244.1.0/24",
        "taints": [{"key": "nvidia.com/gpu", "effect": "NoSchedule"}],
    },
    "status": {"capacity": {"nvidia.com/gpu": "8"}},
}


# a batch Job Kueue admitted in ClusterQueue `research`, with the Workload Kueue made for it
KUEUE_JOB = job("research", "sweep-kueue", suspended=False)
KUEUE_WORKLOAD = workload("research", "sweep-kueue", "research", True, "v1beta2")
KUEUE = [
    cluster_queue("research", 2, None, "v1beta2"),
    local_queue("research", "research", "v1beta2"),
    KUEUE_JOB,
    KUEUE_WORKLOAD,
]


def objects() -> list[Obj]:
    config = _example("time-slicing-config.yaml")
    config["data"][STALE_KEY] = "version: v1\n"
    workloads = [_example(p) for p in WORKLOAD_FILES.values()]
    return [*workloads, VOLCANO_JOB, BARE_POD, GPU_NODE, config, *KUEUE]


def _stored(served: Served, obj: Obj) -> Obj:
    meta = obj["metadata"]
    found = [
        o
        for o in served.cluster.all(*served.cluster.resource_of(obj))
        if o["metadata"]["name"] == meta["name"]
        and o["metadata"].get("namespace", "") == meta.get("namespace", "")
    ]
    assert len(found) == 1, f"{obj['kind']} {meta['name']} is not stored"
    return found[0]


def _job(served: Served, kind: JobKind, obj: Obj) -> Job:
    meta = _stored(served, obj)["metadata"]
    key = f"{meta['namespace']}/{meta['name']}"
    return Job(key, kind, meta["namespace"], meta["name"], "research", 1, uid=meta["uid"])


def _stop(kind: JobKind, *, resume: bool, dry_run: bool = False) -> Callable[[Served], None]:
    def flow(served: Served) -> None:
        w = KubeWriter(served.api, dry_run=dry_run)
        job = _job(served, kind, _example(WORKLOAD_FILES[kind]))
        record = operations.suspend_record(IDENTITY, NOW, "idle 2h", room_for="team-b/pending")
        operations.set_suspended(w, job, True, record)
        if resume:
            operations.set_suspended(w, job, False, operations.resume_record(NOW + 600))

    return flow


COMMANDS = ("bus.volcano.sh", "v1alpha1", "commands")


def _volcano(*, fail: bool = False) -> Callable[[Served], None]:
    def flow(served: Served) -> None:
        w = KubeWriter(served.api, dry_run=False)
        job = _job(served, JobKind.VOLCANO_JOB, VOLCANO_JOB)
        record = operations.suspend_record(IDENTITY, NOW, "idle 2h")
        if fail:  # the Command's create is refused after admission (a 5xx would be read back)
            served.cluster.inject("POST", "/commands$", 422)
        try:
            operations.volcano_command(w, job, True, record, "idle for 2h")
        except KubeError:
            assert fail  # the Command was refused: the record was rolled back
            return
        assert not fail, "the refused create was not reported"
        _stored(served, VOLCANO_JOB)["status"]["state"]["phase"] = "Aborted"  # as Volcano's job
        served.cluster.objects[COMMANDS].clear()  # controller does, taking the Command up
        operations.volcano_command(w, job, False, operations.resume_record(NOW + 600), "resume")

    return flow


def _kueue(served: Served) -> None:
    """Deactivate the Workload of a job Kueue admits, then (Kueue having evicted it) reactivate."""
    w = KubeWriter(served.api, dry_run=False)
    meta, wl = _stored(served, KUEUE_JOB)["metadata"], _stored(served, KUEUE_WORKLOAD)
    admits = KueueWorkload(wl["metadata"]["name"], wl["apiVersion"], wl["metadata"]["uid"])
    key = f"{meta['namespace']}/{meta['name']}"
    job = Job(key, JobKind.BATCH_JOB, meta["namespace"], meta["name"], "research", 2,
              uid=meta["uid"], kueue=admits)  # fmt: skip
    record = operations.suspend_record(IDENTITY, NOW, "idle 2h", room_for="team-b/pending")
    deactivation.set_active(w, job, False, record)
    deactivation.set_active(w, job, True, operations.resume_record(NOW + 600))


def _evict(served: Served) -> None:
    w = KubeWriter(served.api, dry_run=False)
    job = _job(served, JobKind.POD, BARE_POD)
    operations.evict_bare_pod(w, job, NOW, "idle 2h", room_for="team-b/pending")


def _evict_refused(served: Served) -> None:
    """A budget the disruption controller computes as allowing nothing: the dry-run eviction
    answers 429 and nothing else is written."""
    budget = {
        "apiVersion": "policy/v1",
        "kind": "PodDisruptionBudget",
        "metadata": {"name": "debug", "namespace": "team-a", "generation": 1},
        "spec": {"minAvailable": 1, "selector": {"matchLabels": {"app": "debug"}}},
    }
    served.cluster.add(budget)
    w = KubeWriter(served.api, dry_run=False)
    job = _job(served, JobKind.POD, BARE_POD)
    try:
        operations.evict_bare_pod(w, job, NOW, "idle 2h", room_for="team-b/pending")
    except KubeError as exc:
        assert exc.status == 429, exc
    else:
        raise AssertionError("the budget did not stop the eviction")
    assert r.EVICTED_AT not in (_stored(served, BARE_POD)["metadata"].get("annotations") or {})


def _reshape(served: Served) -> None:
    w = KubeWriter(served.api, dry_run=False)
    ref = r.ConfigMapRef()
    args = {"from_replicas": 2, "to_replicas": 4, "projection": 60.0}
    reshaping.reshape_node(w, ref, "gpu-node-1", now=NOW, **args)  # the key, then the label
    reshaping.reshape_node(w, ref, "gpu-node-1", now=NOW + 120, **args)
    assert reshaping.clean_unused_keys(w, ref, {}) == [STALE_KEY]


def _event(served: Served) -> None:
    w = KubeWriter(served.api, dry_run=False)
    involved = {
        "apiVersion": "kubeflow.org/v1",
        "kind": "PyTorchJob",
        "name": "bert",
        "namespace": "research",
        "uid": "u",
    }
    KubeEventRecorder(w, IDENTITY).record(involved, "GpuReclaimPreempted", "idle 2h", NOW, False)


def _warn(kind: JobKind) -> Callable[[Served], None]:
    """A warning before a stop written, then withdrawn (`kube.forewarn`)."""

    def flow(served: Served) -> None:
        w = KubeWriter(served.api, dry_run=False)
        job = _job(served, kind, _example(WORKLOAD_FILES[kind]))
        forewarn.schedule_stop(
            w, job, now=NOW, stop_at=NOW + 600, for_pending="team-b/pending", reason="idle"
        )
        forewarn.withdraw(w, job)

    return flow


def _lease(served: Served) -> None:
    ticks = itertools.count()
    elector = lease.LeaderElector(
        served.api,
        lease.LeaseConfig(identity=IDENTITY),
        wall=lambda: NOW,
        monotonic=lambda: float(next(ticks)),
    )
    assert elector.try_acquire_or_renew()  # create
    assert elector.try_acquire_or_renew()  # renew (update)
    elector.release()  # update


FLOWS: dict[str, Callable[[Served], None]] = {
    **{f"{k.value}-stop-resume": _stop(k, resume=True) for k in WORKLOAD_FILES},
    "PyTorchJob-stop-dry-run": _stop(JobKind.PYTORCH_JOB, resume=False, dry_run=True),
    "KueueWorkload-deactivate-reactivate": _kueue,
    "VolcanoJob-abort-resume": _volcano(),
    "VolcanoJob-abort-rolled-back": _volcano(fail=True),
    "Notebook-warn-withdraw": _warn(JobKind.NOTEBOOK),
    "PyTorchJob-warn-withdraw": _warn(JobKind.PYTORCH_JOB),
    "Pod-evict": _evict,
    "Pod-evict-refused-by-budget": _evict_refused,
    "Node-reshape-and-cleanup": _reshape,
    "Event": _event,
    "Lease-acquire-renew-release": _lease,
}


def run_flow(name: str) -> list[Write]:
    """The writes of one flow, as admission sees them."""
    writes = admitted(flow_cluster(name))
    assert writes, f"{name} sent nothing"
    return writes


def flow_cluster(name: str) -> FakeCluster:
    """The fake cluster after one flow ran against it, with every request it was sent."""
    with serving(objects()) as served:
        FLOWS[name](served)
    return served.cluster
