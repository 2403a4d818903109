"""Object dicts of every suspendable kind with its pods, shaped as their controllers make them.

Each `world(kind)` returns the workload, the controllers between it and its pods, and the pods
(two GPUs in all, one or two pods, running on gpu-node-1), with the owner references the real
controllers set: the training-operator and Volcano own pods directly; the notebook controller
owns a StatefulSet that owns the pod; JobSet owns batch Jobs that own the pods; a RayJob owns a
RayCluster that owns the pods; a TrainJob owns a JobSet of its name (Kubeflow Trainer's JobSet
plugin), which owns a Job that owns the pods, and a Volcano PodGroup of its name (the trainer's
Volcano plugin) that holds its queue.
"""

from __future__ import annotations

from typing import Any

Obj = dict[str, Any]
NS = "team"
CREATED = "2026-11-29T10:00:00Z"
GPU1 = {"limits": {"nvidia.com/gpu": "1"}}


def template(gpus: int = 1, **labels: str) -> Obj:
    res = {"limits": {"nvidia.com/gpu": str(gpus)}}
    return {
        "metadata": {"labels": labels},
        "spec": {"containers": [{"name": "main", "image": "x:1", "resources": res}]},
    }


def meta(kind: str, api: str, name: str, uid: str, **more: Any) -> Obj:
    return {
        "apiVersion": api,
        "kind": kind,
        "metadata": {
            "name": name,
            "namespace": NS,
            "uid": uid,
            "creationTimestamp": CREATED,
            **more,
        },
    }


def owner(obj: Obj) -> Obj:
    m = obj["metadata"]
    return {
        "apiVersion": obj["apiVersion"],
        "kind": obj["kind"],
        "name": m["name"],
        "uid": m["uid"],
        "controller": True,
    }


def pod(name: str, parent: Obj, gpus: int = 1, labels: dict[str, str] | None = None) -> Obj:
    res = {"limits": {"nvidia.com/gpu": str(gpus)}}
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": name,
            "namespace": NS,
            "uid": f"pod-{name}",
            "creationTimestamp": CREATED,
            "labels": {"volcano.sh/queue-name": "research", **(labels or {})},
            "ownerReferences": [owner(parent)],
        },
        "spec": {
            "nodeName": "gpu-node-1",
            "containers": [{"name": "main", "image": "x:1", "resources": res}],
        },
        "status": {"phase": "Running", "startTime": CREATED},
    }


def training(kind: str, specs_key: str, api: str = "kubeflow.org/v1") -> tuple[Obj, list[Obj]]:
    job = meta(kind, api, "train", f"uid-{kind}")
    job["spec"] = {
        "runPolicy": {"schedulingPolicy": {"queue": "research", "minAvailable": 2}},
        specs_key: {
            "Master": {"replicas": 1, "template": template()},
            "Worker": {"replicas": 1, "template": template()},
        },
    }
    return job, [pod("train-master-0", job), pod("train-worker-0", job)]


def notebook() -> tuple[Obj, list[Obj]]:
    nb = meta("Notebook", "kubeflow.org/v1", "lab", "uid-nb")
    nb["spec"] = {"template": template(2)}
    sts = meta("StatefulSet", "apps/v1", "lab", "uid-sts", ownerReferences=[owner(nb)])
    return nb, [sts, pod("lab-0", sts, gpus=2)]


def batch_job() -> tuple[Obj, list[Obj]]:
    job = meta("Job", "batch/v1", "sweep", "uid-bj")
    job["spec"] = {"parallelism": 2, "template": template()}
    return job, [pod("sweep-a", job), pod("sweep-b", job)]


def jobset() -> tuple[Obj, list[Obj]]:
    js = meta("JobSet", "jobset.x-k8s.io/v1alpha2", "pretrain", "uid-js")
    js["spec"] = {
        "replicatedJobs": [
            {"name": "workers", "replicas": 2, "template": {"spec": {"template": template()}}}
        ]
    }
    jobs = [
        meta("Job", "batch/v1", f"pretrain-workers-{i}", f"uid-js-{i}", ownerReferences=[owner(js)])
        for i in range(2)
    ]
    for j in jobs:
        j["spec"] = {"parallelism": 1, "template": template()}
    return js, [*jobs, pod("pretrain-workers-0-0", jobs[0]), pod("pretrain-workers-1-0", jobs[1])]


def ray_job() -> tuple[Obj, list[Obj]]:
    rj = meta("RayJob", "ray.io/v1", "tune", "uid-rj")
    rj["spec"] = {
        "rayClusterSpec": {
            "headGroupSpec": {"template": template(0)},
            "workerGroupSpecs": [{"groupName": "gpu", "replicas": 2, "template": template()}],
        }
    }
    rc = meta("RayCluster", "ray.io/v1", "tune-raycluster", "uid-rc", ownerReferences=[owner(rj)])
    return rj, [rc, pod("tune-worker-a", rc), pod("tune-worker-b", rc)]


def train_job() -> tuple[Obj, list[Obj]]:
    """A TrainJob of two nodes with one GPU each, on a runtime with `podGroupPolicy.volcano`
    whose template names the queue: the trainer put it on the JobSet and the PodGroup."""
    tj = meta("TrainJob", "trainer.kubeflow.org/v1alpha1", "finetune", "uid-tj")
    tj["spec"] = {
        "runtimeRef": {"name": "torch-distributed"},
        "trainer": {"numNodes": 2, "resourcesPerNode": GPU1},
    }
    queue = {"scheduling.volcano.sh/queue-name": "research"}
    js = meta("JobSet", "jobset.x-k8s.io/v1alpha2", "finetune", "uid-tj-js", annotations=queue)
    js["metadata"]["ownerReferences"] = [owner(tj)]
    node = template()
    node["metadata"]["annotations"] = {"scheduling.k8s.io/group-name": "finetune"}
    rj = {"name": "node", "replicas": 1, "template": {"spec": {"parallelism": 2, "template": node}}}
    js["spec"] = {"replicatedJobs": [rj]}
    job = meta("Job", "batch/v1", "finetune-node-0", "uid-tj-j", ownerReferences=[owner(js)])
    job["spec"] = {"parallelism": 2, "template": node}
    pg = meta("PodGroup", "scheduling.volcano.sh/v1beta1", "finetune", "uid-tj-pg")
    pg["metadata"]["ownerReferences"] = [owner(tj)]
    pg["spec"] = {"minMember": 2, "queue": "research", "minResources": {"nvidia.com/gpu": "2"}}
    pg["status"] = {"phase": "Running"}
    pods = [pod(f"finetune-node-0-{i}", job) for i in range(2)]
    for p in pods:
        p["metadata"]["labels"] = {"jobset.sigs.k8s.io/jobset-name": "finetune"}
        p["metadata"]["annotations"] = {"scheduling.k8s.io/group-name": "finetune"}
    return tj, [js, job, pg, *pods]


NAMES = {
    "PyTorchJob": "train",
    "TFJob": "train",
    "XGBoostJob": "train",
    "PaddleJob": "train",
    "JAXJob": "train",
    "MPIJob": "train",
    "Notebook": "lab",
    "BatchJob": "sweep",
    "JobSet": "pretrain",
    "RayJob": "tune",
    "TrainJob": "finetune",
}
WORLDS = {
    "PyTorchJob": lambda: training("PyTorchJob", "pytorchReplicaSpecs"),
    "TFJob": lambda: training("TFJob", "tfReplicaSpecs"),
    "XGBoostJob": lambda: training("XGBoostJob", "xgbReplicaSpecs"),
    "PaddleJob": lambda: training("PaddleJob", "paddleReplicaSpecs"),
    "JAXJob": lambda: training("JAXJob", "jaxReplicaSpecs"),
    "MPIJob": lambda: training("MPIJob", "mpiReplicaSpecs", "kubeflow.org/v2beta1"),
    "Notebook": notebook,
    "BatchJob": batch_job,
    "JobSet": jobset,
    "RayJob": ray_job,
    "TrainJob": train_job,
}


def world(kind: str, namespace: str = NS) -> list[Obj]:
    top, rest = WORLDS[kind]()
    objs = [top, *rest]
    for obj in objs:
        obj["metadata"]["namespace"] = namespace
    return objs
