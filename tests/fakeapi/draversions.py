"""`resource.k8s.io` objects served at the version asked for, as the API server converts them.

The store keeps DRA objects at v1 (the storage version from Kubernetes 1.34); a list at v1beta2
or v1beta1 answers them converted, as kube-apiserver's conversion does
(kubernetes/kubernetes pkg/apis/resource/v1beta1/conversion.go and the v1beta2 one): v1beta2 has
v1's shape; v1beta1 nests a device's `attributes` and `capacity` under `basic`, and a request's
`exactly` fields (`deviceClassName`, `selectors`, `allocationMode`, `count`) sit in the request
itself. Only the fields the reclaimer reads are converted.
"""

from __future__ import annotations

import copy
from typing import Any

Obj = dict[str, Any]
GROUP = "resource.k8s.io"
STORED = "v1"


def stored(res: tuple[str, str, str]) -> tuple[str, str, str]:
    """Where a DRA resource's objects are kept, at whatever version it is asked for."""
    return (GROUP, STORED, res[2]) if res[0] == GROUP else res


def served(obj: Obj, version: str) -> Obj:
    """`obj` (stored at v1) as the server answers it at `version`."""
    if version == STORED:
        return obj
    out = copy.deepcopy(obj)
    out["apiVersion"] = f"{GROUP}/{version}"
    if version != "v1beta1":
        return out
    spec = out.get("spec") or {}
    for device in spec.get("devices") or []:
        if isinstance(device, dict):
            basic = {k: device.pop(k) for k in ("attributes", "capacity") if k in device}
            device["basic"] = basic
    if out.get("kind") not in ("ResourceClaim", "ResourceClaimTemplate"):
        return out
    claim_spec = spec.get("spec", spec)  # a template holds a claim spec in spec.spec
    for req in (claim_spec.get("devices") or {}).get("requests") or []:
        if isinstance(req, dict) and isinstance(req.get("exactly"), dict):
            req.update(req.pop("exactly"))
    return out
