"""Read a cluster snapshot from a `kubectl get ... -o yaml` dump instead of the API server.

The dump may be one `List` (what `kubectl get a,b,c -o yaml` prints), several YAML documents,
or both mixed; `List`s may nest. A later object replaces an earlier one with the same group, kind,
namespace and name (as applying the files in order would), so dumps can be concatenated.
Objects go through the same pure converter the live reader uses, so offline planning sees
exactly what the controller would. Free of the Kubernetes client.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import yaml

from reclaimer.kube.objects.convert import ClusterObjects, group_by_kind, to_cluster_view
from reclaimer.kube.objects.dra import GpuClasses
from reclaimer.kube.objects.resources import ConfigMapRef
from reclaimer.model import ClusterView

log = logging.getLogger(__name__)


class ClusterFileError(ValueError):
    """A dump that is not YAML, or holds something other than Kubernetes objects."""


def _objects(doc: Any, where: str) -> Iterator[dict[str, Any]]:
    if doc is None:
        return
    if not isinstance(doc, dict):
        raise ClusterFileError(f"{where}: expected a Kubernetes object, got {type(doc).__name__}")
    if str(doc.get("kind", "")).endswith("List") and "items" in doc:
        items = doc["items"] or []
        if not isinstance(items, list):
            raise ClusterFileError(f"{where}: 'items' of a {doc['kind']} is not a list")
        for i, item in enumerate(items):
            yield from _objects(item, f"{where} item {i}")
        return
    if not doc.get("kind") or not doc.get("apiVersion"):
        raise ClusterFileError(f"{where}: object without kind/apiVersion")
    if not isinstance(doc.get("metadata"), dict) or not doc["metadata"].get("name"):
        raise ClusterFileError(f"{where}: {doc['kind']} without metadata.name")
    yield doc


def parse_objects(text: str, source: str = "<dump>") -> ClusterObjects:
    """Every Kubernetes object in a YAML dump, sorted by kind."""
    try:
        docs = list(yaml.safe_load_all(text))
    except yaml.YAMLError as exc:
        raise ClusterFileError(f"{source}: not valid YAML: {exc}") from exc
    found: dict[tuple[str, str, str, str], dict[str, Any]] = {}
    for n, doc in enumerate(docs, start=1):
        for obj in _objects(doc, f"{source}: document {n}"):
            meta = obj["metadata"]
            group = str(obj["apiVersion"]).rpartition("/")[0]
            # a later object replaces an earlier one of the same identity, as `kubectl apply`
            found[(group, obj["kind"], meta.get("namespace") or "", meta["name"])] = obj
    if not found:
        raise ClusterFileError(f"{source}: no Kubernetes objects found")
    objs, notes = group_by_kind(found.values())
    for note in notes:  # Namespaces, Deployments...: normal in a dump, not a data problem
        log.info("%s: %s", source, note)
    return objs


def load_cluster_view(
    text: str,
    taken_at: float,
    source: str = "<dump>",
    device_plugin: ConfigMapRef | None = None,
    gpu_classes: GpuClasses | None = None,
) -> ClusterView:
    """A `ClusterView` from dump text (raises `ClusterFileError` on malformed input)."""
    return to_cluster_view(parse_objects(text, source), taken_at, device_plugin, gpu_classes)


def load_cluster_file(
    path: str | Path,
    taken_at: float,
    device_plugin: ConfigMapRef | None = None,
    gpu_classes: GpuClasses | None = None,
) -> ClusterView:
    """A `ClusterView` from a dump file (raises `ClusterFileError`, also for unreadable files)."""
    try:
        text = Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise ClusterFileError(f"{path}: cannot read: {exc}") from exc
    return load_cluster_view(text, taken_at, str(path), device_plugin, gpu_classes)
