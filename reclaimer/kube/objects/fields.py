"""Accessors for plain Kubernetes object dicts (as `kubectl get -o json` gives them). Pure.

Objects are decoded JSON/YAML, so shape checks test for `dict`/`list` (the `Mapping` ABC check
is ten times slower, and a snapshot makes hundreds of thousands of them).
Every accessor tolerates missing fields (the API server omits empty ones) and raises only
`FieldError` for values of the wrong shape, so a converter can turn one bad object into one
`problems` entry instead of failing the whole snapshot.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from types import MappingProxyType
from typing import Any

from reclaimer.devices import NO_MIG, WHOLE_GPU, is_dra, is_mig
from reclaimer.kube.objects.quantity import QuantityError, parse_quantity

Obj = Mapping[str, Any]


class FieldError(ValueError):
    """An object field with an unexpected shape or value."""


def dig(obj: Obj, *path: str) -> Any:
    """obj[path[0]][path[1]]...; None where any step is missing or not a mapping."""
    cur: Any = obj
    for step in path:
        if not isinstance(cur, dict):
            return None
        cur = cur.get(step)
    return cur


def meta(obj: Obj) -> Obj:
    m = obj.get("metadata")
    return m if isinstance(m, dict) else {}


def name(obj: Obj) -> str:
    return str(meta(obj).get("name", ""))


def namespace(obj: Obj) -> str:
    return str(meta(obj).get("namespace") or "default")


def key(obj: Obj) -> str:
    return f"{namespace(obj)}/{name(obj)}"


def string_map(obj: Obj, field: str) -> dict[str, str]:
    value = meta(obj).get(field) or {}
    if not isinstance(value, dict):
        raise FieldError(f"metadata.{field} is not a mapping")
    return {str(k): str(v) for k, v in value.items()}


def labels_of(obj: Obj) -> dict[str, str]:
    return string_map(obj, "labels")


def annotations_of(obj: Obj) -> dict[str, str]:
    return string_map(obj, "annotations")


def controller_owner(obj: Obj) -> Obj | None:
    """The owner reference with `controller: true`, else the only owner, else None."""
    refs = meta(obj).get("ownerReferences") or []
    if not isinstance(refs, list):
        raise FieldError("metadata.ownerReferences is not a list")
    for ref in refs:
        if isinstance(ref, dict) and ref.get("controller"):
            return ref
    return refs[0] if len(refs) == 1 and isinstance(refs[0], dict) else None


def timestamp(value: object) -> float | None:
    """RFC 3339 time (or Unix seconds) -> Unix seconds; None when absent."""
    if value is None or value == "":
        return None
    if isinstance(value, int | float) and not isinstance(value, bool):
        return float(value)
    if isinstance(value, datetime):
        return value.timestamp()
    text = str(value)
    try:
        return float(text)
    except ValueError:
        pass
    try:
        parsed = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError as exc:
        raise FieldError(f"not a timestamp: {text!r}") from exc
    if parsed.tzinfo is None:
        raise FieldError(f"timestamp without a time zone: {text!r}")
    return parsed.timestamp()


def created_at(obj: Obj) -> float:
    return timestamp(meta(obj).get("creationTimestamp")) or 0.0


def gpu_amount(resources: object, resource: str = WHOLE_GPU) -> float | None:
    """`resource` from a resource list ({"nvidia.com/gpu": "2", ...}); None if absent."""
    if not isinstance(resources, dict) or resource not in resources:
        return None
    try:
        return parse_quantity(resources[resource])
    except QuantityError as exc:
        raise FieldError(str(exc)) from exc


def device_amounts(resources: object) -> dict[str, float]:
    """Device resources (`nvidia.com/gpu`, `nvidia.com/mig-*`; `dra:*`, only ever in what
    `dra_templates.with_claimed_gpus` derives) in a resource list."""
    if not isinstance(resources, dict):
        return {}
    names = [str(r) for r in resources if r == WHOLE_GPU or is_mig(str(r)) or is_dra(str(r))]
    return {r: gpu_amount(resources, r) or 0.0 for r in names}


@dataclass(frozen=True)
class Slots:
    """Device slots per resource (`reclaimer.devices`); adds up and scales by replica counts."""

    by: Mapping[str, int] = field(default_factory=lambda: NO_MIG)

    def __add__(self, other: Slots) -> Slots:
        out = dict(self.by)
        for r, n in other.by.items():
            out[r] = out.get(r, 0) + n
        return Slots(MappingProxyType(out))

    def __rmul__(self, times: int) -> Slots:
        return Slots(MappingProxyType({r: times * n for r, n in self.by.items()}))

    @property
    def total(self) -> int:
        return sum(self.by.values())

    @property
    def mig(self) -> Mapping[str, int]:
        # every resource but whole device-plugin GPUs: MIG profiles and DRA devices
        return MappingProxyType({r: n for r, n in self.by.items() if r != WHOLE_GPU and n})


def _container_devices(container: object) -> dict[str, float]:
    if not isinstance(container, dict):
        raise FieldError("container is not a mapping")
    res = container.get("resources") or {}
    # extended resources: requests default to limits and must equal them
    return {**device_amounts(dig(res, "requests")), **device_amounts(dig(res, "limits"))}


def pod_spec_slots(spec: object) -> Slots:
    """Device slots a pod spec holds, per resource: sum over containers, or the largest init
    container if more."""
    if spec is None:
        return Slots()
    if not isinstance(spec, dict):
        raise FieldError("pod spec is not a mapping")
    main: dict[str, float] = {}
    for c in spec.get("containers") or []:
        for r, n in _container_devices(c).items():
            main[r] = main.get(r, 0.0) + n
    for c in spec.get("initContainers") or []:
        for r, n in _container_devices(c).items():
            main[r] = max(main.get(r, 0.0), n)
    for r, n in main.items():
        if n != int(n) or n < 0:
            raise FieldError(f"{r} must be a whole number, got {n}")
    return Slots(MappingProxyType({r: int(n) for r, n in sorted(main.items()) if n}))


def pod_spec_gpus(spec: object) -> int:
    """Device slots a pod spec holds, all resources together."""
    return pod_spec_slots(spec).total


def int_field(value: object, default: int) -> int:
    if value is None:
        return default
    if isinstance(value, bool) or not isinstance(value, int | str):
        raise FieldError(f"not an integer: {value!r}")
    try:
        return int(value)
    except ValueError as exc:
        raise FieldError(f"not an integer: {value!r}") from exc
