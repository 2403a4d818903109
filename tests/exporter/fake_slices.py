"""ResourceSlices as the API server serves them (`resource.k8s.io`), for the fake API server.

Built from the real types and registry, not from the exporter's reader:
- kubernetes/kubernetes staging/src/k8s.io/api/resource/v1/types.go: `ResourceSliceSpec {driver,
  pool {name, generation, resourceSliceCount}, nodeName | nodeSelector | allNodes, devices[]}`,
  `Device {name, attributes, capacity}`, `DeviceAttribute {int | bool | string | version}`,
  `DeviceCapacity {value}`. v1beta2 has the same device shape; v1beta1 keeps a device's
  attributes and capacity under `basic` (`BasicDevice`).
- pkg/apis/resource/v1*/conversion.go (`AddFieldLabelConversionFunc` for ResourceSlice): the
  field selectors accepted are `metadata.name`, `spec.nodeName` and `spec.driver`; any other
  label is refused with 400 "field label not supported".
- kubernetes-sigs/dra-driver-nvidia-gpu cmd/gpu-kubelet-plugin/deviceinfo.go: a whole GPU is
  named `gpu-<minor>` with attributes `type` "gpu", `uuid` (GPU-...), `productName`, ...; a MIG
  device has `type` "mig", its own `uuid` (MIG-...), `parentUUID` and `profile`.
"""

from __future__ import annotations

from typing import Any

SLICES_PREFIX = "/apis/resource.k8s.io/"
FIELD_LABELS = {"metadata.name", "spec.nodeName", "spec.driver"}
GIB = 1 << 30


def gpu_device(minor: int, uuid: str, product: str = "NVIDIA H100 80GB HBM3") -> Any:
    """A whole GPU as NVIDIA's driver publishes it."""
    attributes = {
        "type": {"string": "gpu"},
        "uuid": {"string": uuid},
        "productName": {"string": product},
        "driverVersion": {"version": "550.54.15"},
    }
    return {
        "name": f"gpu-{minor}",
        "attributes": attributes,
        "capacity": {"memory": {"value": f"{80 * GIB}"}},
    }


def mig_device(name: str, uuid: str, parent_uuid: str, profile: str) -> Any:
    """A MIG device as NVIDIA's driver publishes it (its `uuid` is the MIG UUID)."""
    attributes = {
        "type": {"string": "mig"},
        "uuid": {"string": uuid},
        "parentUUID": {"string": parent_uuid},
        "profile": {"string": profile},
    }
    return {"name": name, "attributes": attributes, "capacity": {"memory": {"value": "10Gi"}}}


def slice_json(
    node: str,
    devices: list[Any],
    *,
    driver: str = "gpu.nvidia.com",
    pool: str | None = None,
    generation: int = 1,
    name: str | None = None,
) -> Any:
    """One ResourceSlice of `node` (resource.k8s.io/v1); the pool is named after the node, as
    the kubelet plugin helper names it."""
    return {
        "metadata": {"name": name or f"{node}-{driver}-{generation}", "uid": f"slice-{node}"},
        "spec": {
            "driver": driver,
            "pool": {"name": pool or node, "generation": generation, "resourceSliceCount": 1},
            "nodeName": node,
            "devices": devices,
        },
    }


def _as_version(item: Any, version: str) -> Any:
    if version != "v1beta1":
        return item
    devices = [
        {"name": d["name"], "basic": {k: v for k, v in d.items() if k != "name"}}
        for d in item["spec"]["devices"]
    ]
    return {**item, "spec": {**item["spec"], "devices": devices}}


def _status(code: int, reason: str, message: str) -> tuple[int, Any]:
    body = {"kind": "Status", "status": "Failure", "reason": reason, "code": code}
    return code, {**body, "message": message}


def _field(item: Any, label: str) -> str:
    if label == "metadata.name":
        return str(item["metadata"]["name"])
    return str(item["spec"].get(label.removeprefix("spec."), ""))


def select_slices(
    slices: list[Any], versions: tuple[str, ...], path: str, query: dict[str, list[str]]
) -> tuple[int, Any]:
    """A `ResourceSliceList` page for `GET /apis/resource.k8s.io/<version>/resourceslices`."""
    version, _, resource = path.removeprefix(SLICES_PREFIX).partition("/")
    if resource != "resourceslices" or version not in versions:
        return _status(404, "NotFound", "the server could not find the requested resource")
    items = slices
    for term in filter(None, query.get("fieldSelector", [""])[0].split(",")):
        label, op, value = term.partition("!=") if "!=" in term else term.partition("=")
        value = value.removeprefix("=")  # `==` is `=`
        if label not in FIELD_LABELS:
            kind = f"resource.k8s.io/{version}, Kind=ResourceSlice"
            return _status(400, "BadRequest", f"field label not supported for {kind}: {label}")
        items = [i for i in items if (_field(i, label) == value) == (op == "=")]
    start = int(query.get("continue", ["0"])[0])
    end = start + int(query.get("limit", [str(len(items) or 1)])[0])
    meta = {"resourceVersion": "1", "continue": str(end) if end < len(items) else ""}
    page = [_as_version(i, version) for i in items[start:end]]
    return 200, {
        "kind": "ResourceSliceList",
        "apiVersion": f"resource.k8s.io/{version}",
        "metadata": meta,
        "items": page,
    }
