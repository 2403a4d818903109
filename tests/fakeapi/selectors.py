"""List options of the fake API server: field and label selectors, continue tokens.

- `fieldSelector` (apimachinery fields.ParseSelector): comma-separated `path=value`, `path==value`
  or `path!=value`, all of which must hold. Each kind supports only some paths
  (pkg/registry/core/pod/strategy.go `PodToSelectableFields`: metadata.name, metadata.namespace,
  spec.nodeName, spec.restartPolicy, spec.schedulerName, spec.serviceAccountName,
  spec.hostNetwork, status.phase, status.podIP, status.nominatedNodeName; every kind:
  metadata.name and metadata.namespace); any other path answers 400.
- `labelSelector` (apimachinery labels.Parse): `k=v`, `k==v`, `k!=v` (true when k is absent),
  `k in (a,b)`, `k notin (a,b)` (true when absent), `k` (exists), `!k` (does not exist).
- `continue`: an opaque token carrying the resourceVersion at which the list began and the
  offset reached; once the store is compacted past that version the server answers 410
  Expired, as kube-apiserver does when etcd has compacted the revision (about 5 minutes).
"""

from __future__ import annotations

import base64
import json
import re
from typing import Any

from fakeapi.errors import ApiError

Obj = dict[str, Any]
Requirement = tuple[str, str, tuple[str, ...]]  # key, operator, values

EXPIRED = (
    "The provided continue parameter is too old to display a consistent list result. You can "
    "start a new list without the continue parameter, or use the continue token in this "
    "response to retrieve the remainder of the results."
)
_COMMON = frozenset({"metadata.name", "metadata.namespace"})
_FIELDS = {
    "Pod": _COMMON
    | {
        "spec.nodeName",
        "spec.restartPolicy",
        "spec.schedulerName",
        "spec.serviceAccountName",
        "spec.hostNetwork",
        "status.phase",
        "status.podIP",
        "status.nominatedNodeName",
    },
    "Node": _COMMON | {"spec.unschedulable"},
    "Event": _COMMON | {"involvedObject.name", "involvedObject.kind", "reason", "type"},
}
_SET = re.compile(r"^\s*(\S+)\s+(in|notin)\s+\(([^)]*)\)\s*$")


def parse_field_selector(kind: str, text: str) -> list[Requirement]:
    out: list[Requirement] = []
    for part in filter(None, (p.strip() for p in text.split(","))):
        m = re.fullmatch(r"([^=!]+)(==|=|!=)(.*)", part)
        if m is None:
            raise ApiError(400, "BadRequest", f"invalid field selector: {part!r}")
        path, op, value = m.group(1).strip(), m.group(2), m.group(3).strip()
        if path not in _FIELDS.get(kind, _COMMON):
            raise ApiError(
                400, "BadRequest", f'field label not supported: {path} for kind "{kind}"'
            )
        out.append((path, "!=" if op == "!=" else "=", (value,)))
    return out


def matches_fields(obj: Obj, reqs: list[Requirement]) -> bool:
    for path, op, (value,) in reqs:
        node: Any = obj
        for part in path.split("."):
            node = node.get(part) if isinstance(node, dict) else None
        got = "" if node is None else str(node).lower() if isinstance(node, bool) else str(node)
        if (got == value) != (op == "="):
            return False
    return True


def parse_label_selector(text: str) -> list[Requirement]:
    out: list[Requirement] = []
    for part in _split_outside_parens(text):
        if m := _SET.match(part):
            values = tuple(v.strip() for v in m.group(3).split(",") if v.strip())
            out.append((m.group(1), m.group(2), values))
        elif m := re.fullmatch(r"\s*([^=!\s]+)\s*(==|=|!=)\s*(\S*)\s*", part):
            out.append((m.group(1), "!=" if m.group(2) == "!=" else "=", (m.group(3),)))
        elif m := re.fullmatch(r"\s*!\s*(\S+)\s*", part):
            out.append((m.group(1), "!", ()))
        elif m := re.fullmatch(r"\s*(\S+)\s*", part):
            out.append((m.group(1), "exists", ()))
        else:
            raise ApiError(400, "BadRequest", f"unable to parse requirement: {part!r}")
    return out


def _split_outside_parens(text: str) -> list[str]:
    parts, depth, current = [], 0, ""
    for ch in text:
        depth += ch == "("
        depth -= ch == ")"
        if ch == "," and depth == 0:
            parts.append(current)
            current = ""
        else:
            current += ch
    parts.append(current)
    return [p for p in parts if p.strip()]


def matches_labels(obj: Obj, reqs: list[Requirement]) -> bool:
    labels = (obj.get("metadata") or {}).get("labels") or {}
    return all(_holds(op, key in labels, labels.get(key), values) for key, op, values in reqs)


def _holds(op: str, has: bool, value: str | None, values: tuple[str, ...]) -> bool:
    if op in ("=", "in"):
        return has and value in values
    if op in ("!=", "notin"):
        return not has or value not in values
    return has if op == "exists" else not has


def encode_continue(issued: int, offset: int) -> str:
    raw = json.dumps({"rv": issued, "start": offset}).encode()
    return base64.urlsafe_b64encode(raw).decode()


def decode_continue(token: str, version: int) -> tuple[int, int]:
    """(resourceVersion the list began at, offset); a new list begins now, at 0."""
    if not token:
        return version, 0
    try:
        data = json.loads(base64.urlsafe_b64decode(token.encode()))
        return int(data["rv"]), int(data["start"])
    except (ValueError, KeyError, TypeError) as exc:
        raise ApiError(400, "BadRequest", f"continue key is not valid: {exc}") from exc
