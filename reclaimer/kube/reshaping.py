"""A time-slice reshape as the NVIDIA device plugin can follow it: key, then label, then cleanup.

The plugin reloads only when a node's `nvidia.com/device-plugin.config` label changes value, and it
reads the config from the ConfigMap as mounted in its pod: a key the kubelet has not projected
into that volume yet is a missing key. So a reshape is staged over cycles, its state kept on the
node (annotations), never in memory:

1. write the new, content-addressed key into the ConfigMap and note it on the node
   (`gpu-reclaim.io/reshape-key`, `reshape-key-written-at`); the node keeps its label;
2. a later cycle, at least the policy's `timeSlicing.configProjectionDelay` after the key was
   written,
   relabels the node to it (`last-reshape`, `reshape-from`/`-to`, `reshape-from-key`,
   `reshape-reason`);
3. a key is deleted only when it is the reclaimer's own, no node's label or pending reshape names
   it, and no node is still moving away from it: a node whose `nvidia.com/gpu.replicas` (set by
   GPU feature discovery from the config the plugin loaded) does not show its new replicas yet
   keeps its previous key.

A node without the label runs the GPU operator's default config (`ClusterPolicy`
`spec.devicePlugin.config.default`), which is what a reshape starts from; without a
ClusterPolicy (no GPU operator, or not readable) an unlabelled node runs without time-slicing.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from reclaimer.kube.client import KubeError
from reclaimer.kube.objects import fields as f
from reclaimer.kube.objects import resources as r
from reclaimer.kube.objects import timeslicing
from reclaimer.kube.operations import Precondition
from reclaimer.kube.write import KubeWriter, rfc3339

Obj = dict[str, Any]


def default_config_key(w: KubeWriter, ref: r.ConfigMapRef) -> str | None:
    """The key the GPU operator gives nodes without the config label, if it says so."""
    try:
        policies = w.list_cluster_custom(r.CLUSTER_POLICIES)
    except KubeError as exc:
        if exc.status in (403, 404):
            return None
        raise
    for cp in policies:
        config = f.dig(cp, "spec", "devicePlugin", "config") or {}
        if config.get("name") == ref.name and config.get("default"):
            return str(config["default"])
    return None


def reshape_node(
    w: KubeWriter,
    ref: r.ConfigMapRef,
    node: str,
    *,
    from_replicas: int | None,
    to_replicas: int,
    now: float,
    projection: float,
    reason: str = "",
) -> tuple[Obj, str, str]:
    """Move `node` one stage towards `to_replicas`: (node object, new key, what was done);
    the relabel records `reason` (the plan's) on the node, for the planner's raise hold."""
    node_obj = w.get_node(node)
    cm = w.get_configmap(ref)
    data: dict[str, str] = dict(cm.get("data") or {})
    current_key = f.labels_of(node_obj).get(r.DEVICE_PLUGIN_CONFIG_LABEL)
    base_key = current_key or default_config_key(w, ref)
    base = data.get(base_key, "") if base_key else ""
    current = timeslicing.replicas_of(base)
    if from_replicas is not None and current != from_replicas:
        raise Precondition(
            f"node {node} runs {current} replicas now, the plan assumed {from_replicas}"
        )
    text = timeslicing.render(base, to_replicas)
    new_key = timeslicing.key_for(text, to_replicas)
    if new_key == current_key:
        raise Precondition(f"node {node} already uses {new_key}")
    notes = f.annotations_of(node_obj)
    written = f.timestamp(notes.get(r.RESHAPE_KEY_AT))
    if notes.get(r.RESHAPE_KEY) != new_key or written is None or data.get(new_key) != text:
        _write_key(w, ref, cm, node_obj, entry=(new_key, text), now=now)
        return node_obj, new_key, f"key {new_key} written; relabel once the kubelet projects it"
    if now - written < projection:
        raise Precondition(f"key {new_key} written {now - written:.0f}s ago: not projected yet")
    annotations = {
        r.LAST_RESHAPE: rfc3339(now),
        r.RESHAPE_FROM: str(current),
        r.RESHAPE_TO: str(to_replicas),
        r.RESHAPE_FROM_KEY: base_key or "",
        r.RESHAPE_REASON: reason or None,
        r.RESHAPE_KEY: None,
        r.RESHAPE_KEY_AT: None,
    }
    labels = {r.DEVICE_PLUGIN_CONFIG_LABEL: new_key}
    meta = {"resourceVersion": _rv(node_obj), "labels": labels, "annotations": annotations}
    w.patch_node(node, {"metadata": meta})
    return node_obj, new_key, f"{r.DEVICE_PLUGIN_CONFIG_LABEL}={new_key}"


def _write_key(
    w: KubeWriter,
    ref: r.ConfigMapRef,
    cm: Obj,
    node_obj: Obj,
    *,
    entry: tuple[str, str],
    now: float,
) -> None:
    key, text = entry
    if (cm.get("data") or {}).get(key) != text:  # content-addressed: the text may be there
        w.patch_configmap(ref, {"metadata": {"resourceVersion": _rv(cm)}, "data": {key: text}})
    notes = {r.RESHAPE_KEY: key, r.RESHAPE_KEY_AT: rfc3339(now)}
    w.patch_node(
        f.name(node_obj),
        {"metadata": {"resourceVersion": _rv(node_obj), "annotations": notes}},
    )


def keys_in_use(nodes: Mapping[str, Obj], data: Mapping[str, str]) -> set[str]:
    """Keys a node's label or pending reshape names, and keys a node is still moving away from
    (its GFD replicas label does not show its new config's replicas yet)."""
    used: set[str] = set()
    for obj in nodes.values():
        labels, notes = f.labels_of(obj), f.annotations_of(obj)
        key = labels.get(r.DEVICE_PLUGIN_CONFIG_LABEL, "")
        used |= {key, notes.get(r.RESHAPE_KEY, "")}
        shown = labels.get(r.GPU_REPLICAS_LABEL)
        wanted = timeslicing.replicas_of(data[key]) if key in data else None
        if notes.get(r.RESHAPE_FROM_KEY) and (wanted is None or shown != str(wanted)):
            used.add(notes[r.RESHAPE_FROM_KEY])
    return used - {""}


def clean_unused_keys(w: KubeWriter, ref: r.ConfigMapRef, pointed: Mapping[str, str]) -> list[str]:
    """Delete the reclaimer's keys no node uses (see `keys_in_use`); `pointed` adds node ->
    key pairs a dry-run wrote only in the plan."""
    cm = w.get_configmap(ref)
    data: Mapping[str, str] = cm.get("data") or {}
    used = keys_in_use(w.list_nodes(), data) | set(pointed.values())
    unused = timeslicing.unused_keys(data, used)
    if unused:
        body = {"metadata": {"resourceVersion": _rv(cm)}, "data": dict.fromkeys(unused)}
        w.patch_configmap(ref, body)
    return unused


def _rv(obj: Obj) -> str:
    return str(obj["metadata"]["resourceVersion"])
