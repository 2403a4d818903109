"""Dynamic Resource Allocation objects (`resource.k8s.io/v1`) for the reclaimer's tests. Pure.

Shaped after kubernetes/kubernetes staging/src/k8s.io/api/resource/v1/types.go (ResourceSlice,
DeviceClass, ResourceClaim, ResourceClaimTemplate) and core/v1 `PodResourceClaim`,
`PodResourceClaimStatus`, and after what NVIDIA's driver publishes
(kubernetes-sigs/dra-driver-nvidia-gpu: driver `gpu.nvidia.com`, device attributes `type`
`gpu`/`mig`, `uuid`, MIG devices' `profile`, devices named `gpu-<n>`, one pool per node named
after it).
"""

from __future__ import annotations

from typing import Any

API = "resource.k8s.io/v1"
DRIVER = "gpu.nvidia.com"
GPU_CLASS = "gpu.nvidia.com"

Obj = dict[str, Any]


def resource_slice(node: str, gpus: int, *, driver: str = DRIVER, mig: str = "") -> Obj:
    """The node's devices: `gpus` whole GPUs, or as many MIG devices of profile `mig`."""
    devices = []
    for i in range(gpus):
        attrs: Obj = {
            "type": {"string": "mig" if mig else "gpu"},
            "uuid": {"string": f"GPU-{node}-{i}"},
        }
        if mig:
            attrs["profile"] = {"string": mig}
        devices.append({"name": f"{'mig' if mig else 'gpu'}-{i}", "attributes": attrs})
    return {
        "apiVersion": API,
        "kind": "ResourceSlice",
        "metadata": {"name": f"{node}-{driver}-{mig or 'gpu'}"},
        "spec": {
            "driver": driver,
            "nodeName": node,
            "pool": {"name": node, "generation": 1, "resourceSliceCount": 1},
            "devices": devices,
        },
    }


def device_class(name: str = GPU_CLASS, driver: str = DRIVER) -> Obj:
    expr = f"device.driver == '{driver}'"
    return {
        "apiVersion": API,
        "kind": "DeviceClass",
        "metadata": {"name": name},
        "spec": {"selectors": [{"cel": {"expression": expr}}]},
    }


def claim_spec(count: int = 1, *, device_class_name: str = GPU_CLASS, all_: bool = False) -> Obj:
    exactly: Obj = {"deviceClassName": device_class_name}
    if all_:
        exactly["allocationMode"] = "All"
    else:
        exactly.update(allocationMode="ExactCount", count=count)
    return {"devices": {"requests": [{"name": "gpus", "exactly": exactly}]}}


def template(name: str, ns: str, count: int = 1, **kw: Any) -> Obj:
    return {
        "apiVersion": API,
        "kind": "ResourceClaimTemplate",
        "metadata": {"name": name, "namespace": ns},
        "spec": {"spec": claim_spec(count, **kw)},
    }


def claim(
    name: str,
    ns: str,
    count: int = 1,
    *,
    node: str | None = None,
    devices: tuple[int, ...] = (),
    reserved_for: tuple[Obj, ...] = (),
    owner: Obj | None = None,
    driver: str = DRIVER,
) -> Obj:
    """A claim; allocated `devices` (`gpu-<n>` of `node`'s pool) when given, reserved for the
    pods given (their metadata)."""
    meta: Obj = {"name": name, "namespace": ns}
    if owner is not None:
        meta["ownerReferences"] = [
            {
                "apiVersion": "v1",
                "kind": "Pod",
                "name": owner["name"],
                "uid": owner["uid"],
                "controller": True,
                "blockOwnerDeletion": True,
            }
        ]
    status: Obj = {}
    if devices:
        results = [
            {"request": "gpus", "driver": driver, "pool": node, "device": f"gpu-{i}"}
            for i in devices
        ]
        status["allocation"] = {"devices": {"results": results}}
        status["reservedFor"] = [
            {"resource": "pods", "name": m["name"], "uid": m["uid"]} for m in reserved_for
        ]
    return {
        "apiVersion": API,
        "kind": "ResourceClaim",
        "metadata": meta,
        "spec": claim_spec(count),
        "status": status,
    }


def pod_with_claim(
    pod: Obj, *, template_name: str = "", claim_name: str = "", made: str = ""
) -> Obj:
    """`pod` with one claim `gpus` in its spec (a template's, or a claim by name) used by each
    container; `made`: the claim the controller made from the template (its status)."""
    ref: Obj = {"name": "gpus"}
    if template_name:
        ref["resourceClaimTemplateName"] = template_name
    else:
        ref["resourceClaimName"] = claim_name
    pod["spec"]["resourceClaims"] = [ref]
    for c in pod["spec"].get("containers") or []:
        c.setdefault("resources", {})["claims"] = [{"name": "gpus"}]
    if made:
        statuses = [{"name": "gpus", "resourceClaimName": made}]
        pod.setdefault("status", {})["resourceClaimStatuses"] = statuses
    return pod
