"""Rendered manifests for the deploy tests: `kubectl kustomize`, schema checks, tree walks.

`render(dir)` runs the real `kubectl kustomize` (through tests/kustomize.py) and returns the
objects; `schema_errors(obj)` validates built-in kinds against the Kubernetes OpenAPI schemas of
`kubernetes-validate` (strict: unknown fields are errors) and returns None for kinds it has no
schema for (CRDs, which the tests check structurally). The walkers find values anywhere in an
object tree.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import kubernetes_validate
import kustomize
import yaml
from repo_paths import REPO

DEPLOY = REPO / "deploy"
OVERLAYS = ("dry-run", "enforce", "secure-dry-run", "secure-enforce")
K8S_VERSION = "1.32"  # the kubectl these machines carry

Obj = dict[str, Any]


def render(path: Path) -> list[Obj]:
    return [d for d in yaml.safe_load_all(kustomize.build(path)) if d]


def load_yaml(path: Path) -> list[Obj]:
    return [d for d in yaml.safe_load_all(path.read_text(encoding="utf-8")) if d]


def schema_errors(obj: Obj) -> str | None:
    """ "" when valid, the error text when not, None when there is no schema (a CRD kind)."""
    try:
        kubernetes_validate.validate(obj, K8S_VERSION, strict=True)
    except kubernetes_validate.SchemaNotFoundError:
        return None
    except kubernetes_validate.ValidationError as exc:
        return str(exc).splitlines()[0]
    return ""


def walk(node: Any, path: str = "") -> Iterator[tuple[str, Any, Any]]:
    """(path, key, value) for every mapping entry in a tree of dicts and lists."""
    if isinstance(node, dict):
        for k, v in node.items():
            yield f"{path}.{k}", k, v
            yield from walk(v, f"{path}.{k}")
    elif isinstance(node, list):
        for i, v in enumerate(node):
            yield from walk(v, f"{path}[{i}]")


def pod_specs(obj: Obj) -> Iterator[tuple[str, Obj]]:
    """Every pod spec inside an object: Pods, workload templates, PyTorchJob replica templates."""
    for path, key, value in walk(obj):
        if key == "spec" and isinstance(value, dict) and "containers" in value:
            yield path, value


def containers(obj: Obj) -> Iterator[tuple[str, Obj]]:
    for path, spec in pod_specs(obj):
        for c in spec.get("containers", []) + spec.get("initContainers", []):
            yield f"{path}/{c.get('name')}", c


def name_of(obj: Obj) -> str:
    meta = obj.get("metadata", {})
    ns = meta.get("namespace")
    return f"{obj['kind']}/{ns + '/' if ns else ''}{meta.get('name')}"


def grants(objs: list[Obj], account: str, namespace: str) -> set[tuple[str, str, str, str]]:
    """(scope, apiGroup, resource, verb) the ServiceAccount gets through the rendered RBAC."""
    roles = {
        (o["kind"], o["metadata"].get("namespace", ""), o["metadata"]["name"]): o
        for o in objs
        if o["kind"] in ("Role", "ClusterRole")
    }
    out: set[tuple[str, str, str, str]] = set()
    for b in objs:
        if b["kind"] not in ("RoleBinding", "ClusterRoleBinding"):
            continue
        if not any(
            s.get("kind") == "ServiceAccount"
            and s.get("name") == account
            and s.get("namespace") == namespace
            for s in b.get("subjects", [])
        ):
            continue
        scope = b["metadata"].get("namespace", "cluster")
        ref = b["roleRef"]
        role_ns = "" if ref["kind"] == "ClusterRole" else b["metadata"].get("namespace", "")
        role = roles.get((ref["kind"], role_ns, ref["name"]))
        assert role is not None, f"{name_of(b)} binds a missing {ref['kind']} {ref['name']}"
        for rule in role.get("rules", []):
            for g in rule.get("apiGroups", []):
                for res in rule.get("resources", []):
                    for verb in rule.get("verbs", []):
                        out.add((scope, g, res, verb))
    return out
