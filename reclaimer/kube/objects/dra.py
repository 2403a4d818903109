"""GPUs allocated through Dynamic Resource Allocation (`resource.k8s.io`), decoded. Pure.

Built from the API types in kubernetes/kubernetes staging/src/k8s.io/api/resource/v1/types.go
(and its v1beta1/v1beta2 siblings) and kube-controller-manager's resourceclaim controller
(pkg/controller/resourceclaim/controller.go):

- A ResourceSlice (`spec.driver`, `spec.pool.name`, `spec.nodeName`, `spec.devices[]`) lists a
  node's devices. NVIDIA's driver (kubernetes-sigs/dra-driver-nvidia-gpu) publishes each device
  with a `type` attribute, `gpu` or `mig`, and a MIG device with its `profile`: a GPU is a slot
  of `nvidia.com/gpu`, a MIG device one of `nvidia.com/mig-<profile>` (`reclaimer.devices`), so
  DRA and device-plugin slots are counted alike. v1beta1 nests attributes under `basic`.
- A pod names its claims in `spec.resourceClaims[]`: `resourceClaimName` (a claim made by hand,
  which outlives the pod), or `resourceClaimTemplateName`, for which the controller creates a
  claim owned by the pod and names it in `status.resourceClaimStatuses[]`.
- The scheduler allocates a claim (`status.allocation.devices.results[]`: request, driver, pool,
  device) and reserves it for its pods (`status.reservedFor[]`). When no pod reserves it any
  more the controller clears the allocation; a claim made from a template goes with its pod.

How the reclaimer counts them:
- An allocated claim reserved by exactly one live pod is that pod's: its GPUs are the pod's
  slots, freed when the pod goes (room in flight while it terminates).
- An allocated claim that several pods reserve is shared: its devices stay taken until every
  one of them is gone, so they are counted on the node as *held*, never as any job's room. So is
  a device several claims hold (each result with its `shareID`: consumable capacity), once.
  An `adminAccess` result (monitoring beside the device's user) holds nothing.
- An allocated claim no live pod reserves is waiting for the controller to deallocate it: its
  devices are counted on the node as *releasing*, room that is coming.
- A pod whose claim is not allocated yet (or not created yet) asks for what its claim, or its
  template, requests: `exactly.count` devices (1 by default) of a GPU device class, or, for
  `allocationMode: All`, as many as the largest node offers of that class.
Which drivers and device classes are GPUs is the policy's `dra` section (`GpuClasses`, NVIDIA's
by default).
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

from reclaimer.devices import dra_resource
from reclaimer.kube.objects import fields as f
from reclaimer.model import Node
from reclaimer.policy.settings import Dra

GpuClasses = Dra  # which DRA drivers and device classes are GPUs: the policy says

Obj = f.Obj
_PROFILE = re.compile(r"profile\W[^=]*==\s*['\"]([0-9a-z.+]+)['\"]")
_DRIVER = re.compile(r"device\.driver\s*==\s*['\"]([^'\"]+)['\"]")


@dataclass(frozen=True)
class ClaimCounts:
    """What the claims of a cluster add up to, per pod and per node (slots by resource)."""

    by_pod: Mapping[str, Mapping[str, int]]  # pod key -> slots its own claims hold or ask for
    held: Mapping[str, Mapping[str, int]]  # node -> slots of claims several pods share
    releasing: Mapping[str, Mapping[str, int]]  # node -> slots of claims no pod reserves
    problems: tuple[str, ...] = ()


@dataclass(frozen=True)
class _Device:
    node: str
    resource: str


_DeviceKey = tuple[str, str, str]  # (driver, pool, device)


@dataclass
class _Index:
    devices: dict[_DeviceKey, _Device] = field(default_factory=dict)
    offers: dict[str, dict[str, int]] = field(default_factory=dict)  # node -> resource -> n


def _attr(driver: str, device: Obj, name: str) -> str:
    """A device's string attribute, by its name alone or qualified by the driver's domain."""
    attrs = device.get("attributes") or f.dig(device, "basic", "attributes") or {}
    for key in (name, f"{driver}/{name}"):
        value = attrs.get(key) if isinstance(attrs, dict) else None
        if isinstance(value, dict):
            found = value.get("string", value.get("version"))
            if found is not None:
                return str(found)
    return ""


def _resource(driver: str, device: Obj) -> str:
    mig = _attr(driver, device, "type") == "mig"
    profile = _attr(driver, device, "profile") if mig else ""
    return dra_resource(driver, profile)


def index_slices(slices: Iterable[Obj], gpus: GpuClasses) -> _Index:
    """Every GPU device the node-local ResourceSlices publish, by (driver, pool, device); of a
    pool only the slices of its newest `pool.generation` count, as the scheduler's allocator
    does (k8s.io/dynamic-resource-allocation structured/pools.go)."""
    index = _Index()
    gpu_slices = [s for s in slices if str(f.dig(s, "spec", "driver") or "") in gpus.gpu_drivers]
    newest: dict[tuple[str, str], int] = {}
    for s in gpu_slices:  # a pool's slices of an older generation are stale (being replaced)
        key = (str(f.dig(s, "spec", "driver")), str(f.dig(s, "spec", "pool", "name") or ""))
        newest[key] = max(
            newest.get(key, 0), f.int_field(f.dig(s, "spec", "pool", "generation"), 0)
        )
    for s in gpu_slices:
        spec = s.get("spec") or {}
        driver, node = str(spec.get("driver", "")), str(spec.get("nodeName") or "")
        pool = str(f.dig(spec, "pool", "name") or "")
        generation = f.int_field(f.dig(spec, "pool", "generation"), 0)
        if not node or generation < newest[(driver, pool)]:
            continue
        for device in spec.get("devices") or []:
            res = _resource(driver, device)
            index.devices[(driver, pool, str(device.get("name", "")))] = _Device(node, res)
            mine = index.offers.setdefault(node, {})
            mine[res] = mine.get(res, 0) + 1
    return index


def node_offers(slices: Iterable[Obj], gpus: GpuClasses) -> dict[str, dict[str, int]]:
    """Node name -> GPU slots by resource that its ResourceSlices publish."""
    return index_slices(slices, gpus).offers


def gpu_classes(device_classes: Iterable[Obj], gpus: GpuClasses) -> dict[str, str]:
    """GPU device class -> the driver whose devices it selects: the policy's classes (NVIDIA's
    `gpu.nvidia.com` and `mig.nvidia.com` both select `gpu.nvidia.com` devices), and any
    DeviceClass whose CEL selector names a GPU driver (`device.driver == "..."`)."""
    out = dict.fromkeys(gpus.gpu_device_classes, gpus.gpu_drivers[0] if gpus.gpu_drivers else "")
    for dc in device_classes:
        for sel in f.dig(dc, "spec", "selectors") or []:
            expr = str(f.dig(sel, "cel", "expression") or "")
            named = [d for d in _DRIVER.findall(expr) if d in gpus.gpu_drivers]
            if named:
                out[f.name(dc)] = named[0]
    return out


def requested(spec: Any, classes: Mapping[str, str], index: _Index) -> dict[str, int]:
    """GPU slots by resource a ResourceClaimSpec asks for (its first alternative, if any); a
    MIG profile is read from the request's CEL selectors."""
    out: dict[str, int] = {}
    for req in f.dig(spec, "devices", "requests") or []:
        alternatives = req.get("firstAvailable") or [req.get("exactly") or req]
        ask = alternatives[0]
        driver = classes.get(str(ask.get("deviceClassName", "")))
        if driver is None or ask.get("adminAccess"):
            continue
        exprs = (str(f.dig(s, "cel", "expression") or "") for s in ask.get("selectors") or [])
        profile = _PROFILE.search(" ".join(exprs))
        res = dra_resource(driver, profile.group(1) if profile else "")
        if ask.get("allocationMode") == "All":
            n = max((o.get(res, 0) for o in index.offers.values()), default=0)
        else:
            n = f.int_field(ask.get("count"), 1)
        out[res] = out.get(res, 0) + n
    return out


def _allocated(claim: Obj, index: _Index, gpus: GpuClasses) -> list[tuple[_DeviceKey, _Device]]:
    """The GPU devices a claim's allocation holds; an `adminAccess` result (monitoring access
    beside whoever holds the device) holds none."""
    out = []
    for r in f.dig(claim, "status", "allocation", "devices", "results") or []:
        driver = str(r.get("driver", ""))
        if driver not in gpus.gpu_drivers or r.get("adminAccess"):
            continue
        key = (driver, str(r.get("pool", "")), str(r.get("device", "")))
        out.append((key, index.devices.get(key) or _Device("", dra_resource(driver))))
    return out


def pod_claim_names(pod: Obj) -> dict[str, tuple[str | None, str | None]]:
    """The pod's claims by their name in the pod: (claim name, template name); the claim name of
    a template's claim is the one `status.resourceClaimStatuses` gives, None until made."""
    made = {
        str(s.get("name")): s.get("resourceClaimName")
        for s in f.dig(pod, "status", "resourceClaimStatuses") or []
    }
    out: dict[str, tuple[str | None, str | None]] = {}
    for c in f.dig(pod, "spec", "resourceClaims") or []:
        name = str(c.get("name", ""))
        if c.get("resourceClaimName"):
            out[name] = (str(c["resourceClaimName"]), None)
        else:
            template = c.get("resourceClaimTemplateName")
            out[name] = (made.get(name), str(template) if template else None)
    return out


def _add(into: dict[str, dict[str, int]], outer: str, res: str, n: int = 1) -> None:
    mine = into.setdefault(outer, {})
    mine[res] = mine.get(res, 0) + n


def _frozen(d: Mapping[str, Mapping[str, int]]) -> Mapping[str, Mapping[str, int]]:
    return MappingProxyType({k: MappingProxyType(dict(v)) for k, v in sorted(d.items())})


def count_claims(
    pods: Sequence[Obj],
    *,
    claims: Sequence[Obj],
    templates: Sequence[Obj],
    slices: Sequence[Obj],
    device_classes: Sequence[Obj],
    gpus: GpuClasses | None = None,
) -> ClaimCounts:
    """Each pod's GPU slots from its claims, and the nodes' held and releasing slots."""
    gpus = gpus or GpuClasses()
    index = index_slices(slices, gpus)
    live = {str(f.meta(p).get("uid", "")): f.key(p) for p in pods}
    by_pod: dict[str, dict[str, int]] = {}
    held: dict[str, dict[str, int]] = {}
    releasing: dict[str, dict[str, int]] = {}
    users: dict[_DeviceKey, list[tuple[_Device, frozenset[str]]]] = {}
    for claim in claims:
        reservers = frozenset(
            live[str(r.get("uid", ""))]
            for r in f.dig(claim, "status", "reservedFor") or []
            if r.get("resource") == "pods" and str(r.get("uid", "")) in live
        )
        for key, d in _allocated(claim, index, gpus):
            users.setdefault(key, []).append((d, reservers))
    for found in users.values():
        # a device several claims hold (shareID: consumable capacity) is as shared as a claim
        # several pods reserve; counted once, on its node
        d, reservers = found[0][0], frozenset().union(*(r for _, r in found))
        if len(reservers) == 1 and len(found) == 1:
            _add(by_pod, next(iter(reservers)), d.resource)
        else:
            _add(held if reservers else releasing, d.node, d.resource)
    asked = _Asked(
        {f.key(c): c for c in claims},
        {f.key(t): t for t in templates},
        gpu_classes(device_classes, gpus),
        index,
    )
    problems: list[str] = []
    for p in pods:
        for res, n in asked.of_pod(p, problems).items():
            _add(by_pod, f.key(p), res, n)
    return ClaimCounts(_frozen(by_pod), _frozen(held), _frozen(releasing), tuple(problems))


@dataclass(frozen=True)
class _Asked:
    """What a pod's claims not yet allocated ask for, from the claim, or from its template
    while the controller has not made the claim yet."""

    claims: Mapping[str, Obj]
    templates: Mapping[str, Obj]
    classes: Mapping[str, str]
    index: _Index

    def of_pod(self, pod: Obj, problems: list[str]) -> dict[str, int]:
        out: dict[str, int] = {}
        ns = f.namespace(pod)
        for claim_name, template in pod_claim_names(pod).values():
            found = self.claims.get(f"{ns}/{claim_name}") if claim_name else None
            if found is not None and f.dig(found, "status", "allocation") is not None:
                continue  # counted with the allocated claims, by who reserves it
            spec = f.dig(found, "spec") if found is not None else None
            if spec is None and template is not None and claim_name is None:
                spec = f.dig(self.templates.get(f"{ns}/{template}") or {}, "spec", "spec")
            if spec is None:
                problems.append(f"Pod {f.key(pod)}: a resource claim it names is not found")
                continue
            for res, n in requested(spec, self.classes, self.index).items():
                out[res] = out.get(res, 0) + n
        return out


def no_claims() -> ClaimCounts:
    return ClaimCounts(MappingProxyType({}), MappingProxyType({}), MappingProxyType({}))


def with_claims(node: Node, counts: ClaimCounts) -> Node:
    """The node with the slots of its shared and deallocating claims (`Node.claims_held`)."""
    held, releasing = counts.held.get(node.name), counts.releasing.get(node.name)
    if not held and not releasing:
        return node
    return dataclasses.replace(
        node,
        claims_held=held or node.claims_held,
        claims_releasing=releasing or node.claims_releasing,
    )
