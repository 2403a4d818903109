"""A Kueue cluster as its controllers leave it: ClusterQueues in a cohort, LocalQueues, batch Jobs
labelled `kueue.x-k8s.io/queue-name`, and the Workload Kueue made for each (owned by its job,
named `job-<job>-<hash>` as Kueue's jobframework `GetWorkloadNameForOwnerWithGVK` names them).

- ClusterQueue `research` (cohort `gpus`, 2 GPUs nominal, unbounded borrowing) runs `idle` and
  `busy`, two GPUs each: two of the four are borrowed from `team-b`;
- ClusterQueue `team-b` (cohort `gpus`, 2 GPUs nominal) has `llm` waiting: its Workload holds no
  quota and its Job stays suspended, as Kueue keeps it;
- ClusterQueue `prod` (no cohort, 2 GPUs nominal) runs `serve` within its quota.
One node holds six GPUs, all in use. Shapes from kubernetes-sigs/kueue apis/kueue/v1beta1 and
v1beta2 (`workload_types.go`, `clusterqueue_types.go`, `localqueue_types.go`).
"""

from __future__ import annotations

from typing import Any

Obj = dict[str, Any]
GROUP = "kueue.x-k8s.io"
CREATED = "2026-11-29T10:00:00Z"
RUNNING = {"research": ("idle", "busy"), "prod": ("serve",)}
WAITING = {"team-b": ("llm",)}
NODE = "gpu-node-1"


def cluster_queue(name: str, nominal: int, cohort: str | None, version: str) -> Obj:
    spec: Obj = {
        "namespaceSelector": {},
        "resourceGroups": [
            {
                "coveredResources": ["cpu", "nvidia.com/gpu"],
                "flavors": [
                    {
                        "name": "default",
                        "resources": [
                            {"name": "cpu", "nominalQuota": "64"},
                            {"name": "nvidia.com/gpu", "nominalQuota": str(nominal)},
                        ],
                    }
                ],
            }
        ],
    }
    if cohort:
        spec["cohortName" if version != "v1beta1" else "cohort"] = cohort
    api = f"{GROUP}/{version}"
    return {"apiVersion": api, "kind": "ClusterQueue", "metadata": {"name": name}, "spec": spec}


def local_queue(ns: str, cq: str, version: str) -> Obj:
    return {
        "apiVersion": f"{GROUP}/{version}",
        "kind": "LocalQueue",
        "metadata": {"name": cq, "namespace": ns},
        "spec": {"clusterQueue": cq},
    }


def _template(gpus: int) -> Obj:
    res = {"requests": {"nvidia.com/gpu": str(gpus)}, "limits": {"nvidia.com/gpu": str(gpus)}}
    return {"spec": {"containers": [{"name": "main", "image": "x:1", "resources": res}]}}


def job(ns: str, name: str, suspended: bool) -> Obj:
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {
            "name": name,
            "namespace": ns,
            "uid": f"uid-{name}",
            "creationTimestamp": CREATED,
            "labels": {"kueue.x-k8s.io/queue-name": ns},
        },
        "spec": {"parallelism": 2, "suspend": suspended, "template": _template(1)},
    }


def workload(ns: str, name: str, cq: str, admitted: bool, version: str) -> Obj:
    owner = {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "name": name,
        "uid": f"uid-{name}",
        "controller": True,
        "blockOwnerDeletion": True,
    }
    wl: Obj = {
        "apiVersion": f"{GROUP}/{version}",
        "kind": "Workload",
        "metadata": {
            "name": f"job-{name}-1a2b3",
            "namespace": ns,
            "uid": f"uid-wl-{name}",
            "creationTimestamp": CREATED,
            "labels": {"kueue.x-k8s.io/job-uid": f"uid-{name}"},
            "ownerReferences": [owner],
        },
        "spec": {
            "active": True,
            "queueName": ns,
            "priority": 0,
            "podSets": [{"name": "main", "count": 2, "template": _template(1)}],
        },
        "status": {"conditions": []},
    }
    if admitted:
        wl["status"] = {
            "admission": {
                "clusterQueue": cq,
                "podSetAssignments": [
                    {
                        "name": "main",
                        "count": 2,
                        "flavors": {"nvidia.com/gpu": "default"},
                        "resourceUsage": {"nvidia.com/gpu": "2"},
                    }
                ],
            },
            "conditions": [
                _condition("QuotaReserved", "QuotaReserved"),
                _condition("Admitted", "Admitted"),
            ],
        }
    return wl


def _condition(kind: str, reason: str) -> Obj:
    return {
        "type": kind,
        "status": "True",
        "reason": reason,
        "message": "",
        "lastTransitionTime": CREATED,
    }


def pod(ns: str, job_name: str, i: int) -> Obj:
    owner = {"apiVersion": "batch/v1", "kind": "Job", "name": job_name, "uid": f"uid-{job_name}"}
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": f"{job_name}-{i}",
            "namespace": ns,
            "uid": f"pod-{job_name}-{i}",
            "creationTimestamp": CREATED,
            "labels": {"kueue.x-k8s.io/queue-name": ns, "job-name": job_name},
            "ownerReferences": [{**owner, "controller": True}],
        },
        "spec": {"nodeName": NODE, **_template(1)["spec"]},
        "status": {"phase": "Running", "startTime": CREATED},
    }


def kueue_world(version: str = "v1beta2") -> list[Obj]:
    objs: list[Obj] = [
        cluster_queue("research", 2, "gpus", version),
        cluster_queue("team-b", 2, "gpus", version),
        cluster_queue("prod", 2, None, version),
        {
            "apiVersion": "v1",
            "kind": "Node",
            "metadata": {"name": NODE, "labels": {"nvidia.com/gpu.count": "6"}},
            "status": {"capacity": {"nvidia.com/gpu": "6"}, "allocatable": {"nvidia.com/gpu": "6"}},
        },
    ]
    for ns, names in {**RUNNING, **WAITING}.items():
        objs.append(local_queue(ns, ns, version))
        for name in names:
            running = ns in RUNNING
            objs += [job(ns, name, not running), workload(ns, name, ns, running, version)]
            objs += [pod(ns, name, i) for i in range(2)] if running else []
    return objs


def pick(objs: list[Obj], kind: str, name: str) -> Obj:
    return next(o for o in objs if o["kind"] == kind and o["metadata"]["name"] == name)
