"""Accessors for plain Kubernetes object dicts (as `kubectl get -o json` gives them). Pure.

Objects are decoded JSON/YAML, so shape checks test for `dict`/`list` (the `Mapping` ABC check
is ten times slower, and a snapshot makes hundreds of thousands of them).
Every accessor tolerates missing fields (the API server omits empty ones) and raises only
`FieldError` for values of the wrong shape, so a converter can turn one bad object into one
`problems` entry instead of failing the whole snapshot.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import Any

from reclaimer.kube.objects.quantity import QuantityError, parse_quantity
from reclaimer.kube.objects.resources import GPU_RESOURCE

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


def gpu_amount(resources: object) -> float | None:
    """`nvidia.com/gpu` from a resource list ({"nvidia.com/gpu": "2", ...}); None if absent."""
    if not isinstance(resources, dict) or GPU_RESOURCE not in resources:
        return None
    try:
        return parse_quantity(resources[GPU_RESOURCE])
    except QuantityError as exc:
        raise FieldError(str(exc)) from exc


def _container_gpus(container: object) -> float:
    if not isinstance(container, dict):
        raise FieldError("container is not a mapping")
    res = container.get("resources") or {}
    # extended resources: requests default to limits and must equal them
    found = gpu_amount(dig(res, "limits"))
    return found if found is not None else gpu_amount(dig(res, "requests")) or 0.0


def pod_spec_gpus(spec: object) -> int:
    """GPUs a pod spec holds: sum over containers, or the largest init container if more."""
    if spec is None:
        return 0
    if not isinstance(spec, dict):
        raise FieldError("pod spec is not a mapping")
    main = sum(_container_gpus(c) for c in spec.get("containers") or [])
    init = max((_container_gpus(c) for c in spec.get("initContainers") or []), default=0.0)
    total = max(main, init)
    if total != int(total):
        raise FieldError(f"{GPU_RESOURCE} must be a whole number, got {total}")
    return int(total)


def int_field(value: object, default: int) -> int:
    if value is None:
        return default
    if isinstance(value, bool) or not isinstance(value, int | str):
        raise FieldError(f"not an integer: {value!r}")
    try:
        return int(value)
    except ValueError as exc:
        raise FieldError(f"not an integer: {value!r}") from exc
