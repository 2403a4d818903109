"""The safety world (`safety_world`) with its GPUs allocated through DRA instead of the device
plugin: one node whose 4 GPUs a ResourceSlice of NVIDIA's driver publishes, the idle and the busy
PyTorchJob each holding 2 of them through a claim made from a ResourceClaimTemplate, and prod's
job waiting as a PodGroup with a pending pod whose template asks for 2 GPUs.

`mixed_objects` adds a device-plugin node beside it (`gpu-node-2`, 2 `nvidia.com/gpu`), where
an idle bare pod of research holds both GPUs. Timestamps are relative to `now`.
"""

from __future__ import annotations

import copy
from typing import Any

from draobjects import claim, device_class, pod_with_claim, resource_slice, template
from safety_world import cluster_objects, ts

NODE = "gpu-node-1"
TEMPLATE = "two-gpus"
Obj = dict[str, Any]


def _without_gpu_limits(obj: Obj) -> None:
    """Container GPU limits and node GPU capacity removed: DRA gives the GPUs."""
    if obj["kind"] == "Node":
        obj["status"] = {}
        obj["metadata"]["labels"] = {}
    specs = []
    if obj["kind"] == "Pod":
        specs.append(obj["spec"])
    if obj["kind"] == "PyTorchJob":
        specs += [r["template"]["spec"] for r in obj["spec"]["pytorchReplicaSpecs"].values()]
    for spec in specs:
        for c in spec["containers"]:
            c.pop("resources", None)
        spec["resourceClaims"] = [{"name": "gpus", "resourceClaimTemplateName": TEMPLATE}]
        for c in spec["containers"]:
            c["resources"] = {"claims": [{"name": "gpus"}]}


def _running_claims(objs: list[Obj]) -> list[Obj]:
    """The claims the controller made for the running pods, allocated and reserved for them."""
    out = []
    first = {"notebook-master-0": (0, 1), "train-master-0": (2, 3)}
    for obj in objs:
        name = obj["metadata"]["name"]
        if obj["kind"] == "Pod" and name in first:
            made = f"{name}-gpus-x"
            meta = obj["metadata"]
            out.append(
                claim(
                    made,
                    "research",
                    2,
                    node=NODE,
                    devices=first[name],
                    reserved_for=(meta,),
                    owner=meta,
                )
            )
            obj["status"]["resourceClaimStatuses"] = [{"name": "gpus", "resourceClaimName": made}]
    return out


def _waiting_pod(now: float) -> Obj:
    pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": "llm-master-0",
            "namespace": "prod",
            "uid": "33333333-0000-0000-0000-00000000000c",
            "creationTimestamp": ts(now - 1800),
            "annotations": {"scheduling.k8s.io/group-name": "llm"},
        },
        "spec": {"containers": [{"name": "main", "image": "llm:1"}]},
        "status": {"phase": "Pending"},
    }
    return pod_with_claim(pod, template_name=TEMPLATE)


def dra_objects(now: float) -> list[Obj]:
    objs = copy.deepcopy(cluster_objects(now))
    for obj in objs:
        _without_gpu_limits(obj)
        if obj["kind"] == "PodGroup" and obj["metadata"]["name"] == "llm":
            del obj["spec"]["minResources"]  # Volcano lists no nvidia.com/gpu for DRA pods
    return [
        *objs,
        *_running_claims(objs),
        _waiting_pod(now),
        resource_slice(NODE, 4),
        device_class(),
        template(TEMPLATE, "research", 2),
        template(TEMPLATE, "prod", 2),
    ]


def mixed_objects(now: float) -> list[Obj]:
    """`dra_objects` with a device-plugin node beside the DRA one."""
    plugin_node = {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": "gpu-node-2", "labels": {"nvidia.com/gpu.count": "2"}},
        "status": {"capacity": {"nvidia.com/gpu": "2"}, "allocatable": {"nvidia.com/gpu": "2"}},
    }
    idle = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": "scratch",
            "namespace": "research",
            "uid": "44444444-0000-0000-0000-00000000000d",
            "creationTimestamp": ts(now - 26 * 3600),
            "labels": {"volcano.sh/queue-name": "research"},
        },
        "spec": {
            "nodeName": "gpu-node-2",
            "containers": [
                {"name": "main", "image": "m:1", "resources": {"limits": {"nvidia.com/gpu": "2"}}}
            ],
        },
        "status": {"phase": "Running", "startTime": ts(now - 26 * 3600 + 30)},
    }
    return [*dra_objects(now), plugin_node, idle]
