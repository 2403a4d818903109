"""NVIDIA device-plugin time-slicing configs: read the replicas, write a reshaped config. Pure.

The plugin reloads only when a node's `nvidia.com/device-plugin.config` label changes value, so
a reshape never edits a key in place: it writes a new key and relabels the node. New keys are
content-addressed (`gpu-reclaim-r<replicas>-<hash>`): the text under a key never changes, two
nodes reshaped to the same config share one key, and only keys with the reclaimer's prefix that
no node points to are ever deleted.
"""

from __future__ import annotations

import copy
import hashlib
from collections.abc import Iterable, Mapping
from typing import Any

import yaml

from reclaimer.kube.objects.resources import GPU_RESOURCE

KEY_PREFIX = "gpu-reclaim-"


class TimeSlicingError(ValueError):
    """A device-plugin config that cannot be read."""


def _load(text: str) -> dict[str, Any]:
    try:
        doc = yaml.safe_load(text) if text.strip() else {}
    except yaml.YAMLError as exc:
        raise TimeSlicingError(f"device-plugin config is not YAML: {exc}") from exc
    if doc is None:
        return {}
    if not isinstance(doc, dict):
        raise TimeSlicingError("device-plugin config is not a mapping")
    return doc


def replicas_of(text: str) -> int:
    """Time-slice replicas per GPU for `nvidia.com/gpu` in a config (1 = no sharing)."""
    doc = _load(text)
    sharing = doc.get("sharing") or {}
    slicing = sharing.get("timeSlicing") if isinstance(sharing, dict) else None
    resources = slicing.get("resources") if isinstance(slicing, dict) else None
    for res in resources or []:
        if isinstance(res, dict) and res.get("name") == GPU_RESOURCE:
            replicas = res.get("replicas", 1)
            if not isinstance(replicas, int) or isinstance(replicas, bool) or replicas < 1:
                raise TimeSlicingError(f"replicas must be a positive integer, got {replicas!r}")
            return replicas
    return 1


def render(base_text: str, replicas: int) -> str:
    """`base_text` with `nvidia.com/gpu` time-sliced into `replicas` (1 removes the sharing).

    Every other setting of the base config (flags, other resources) is kept.
    """
    if replicas < 1:
        raise TimeSlicingError(f"replicas must be >= 1, got {replicas}")
    doc = copy.deepcopy(_load(base_text))
    doc.setdefault("version", "v1")
    sharing = doc.setdefault("sharing", {})
    slicing = sharing.setdefault("timeSlicing", {})
    others = [r for r in slicing.get("resources") or [] if r.get("name") != GPU_RESOURCE]
    if replicas >= 2:
        slicing.setdefault("renameByDefault", False)
        slicing.setdefault("failRequestsGreaterThanOne", False)
        others.append({"name": GPU_RESOURCE, "replicas": replicas})
    if others:
        slicing["resources"] = others
    else:
        del sharing["timeSlicing"]
        if not sharing:
            del doc["sharing"]
    return yaml.safe_dump(doc, sort_keys=False)


def key_for(text: str, replicas: int) -> str:
    """The content-addressed ConfigMap key for a rendered config."""
    digest = hashlib.sha256(text.encode()).hexdigest()[:10]
    return f"{KEY_PREFIX}r{replicas}-{digest}"


def unused_keys(data: Mapping[str, str], referenced: Iterable[str]) -> list[str]:
    """The reclaimer's own keys that no node label points to (safe to delete)."""
    used = set(referenced)
    return sorted(k for k in data if k.startswith(KEY_PREFIX) and k not in used)
