"""One Node object decoded: its physical GPUs, time-slice replicas (from the device plugin's
ConfigMap key the node points to), MIG offer, workload classes and the reclaimer's annotations."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from types import MappingProxyType

from reclaimer.devices import WHOLE_GPU
from reclaimer.kube.objects import fields as f
from reclaimer.kube.objects import resources as r
from reclaimer.kube.objects.timeslicing import replicas_of
from reclaimer.model import Node

Obj = f.Obj


def device_plugin_data(
    configmaps: Sequence[Obj], ref: r.ConfigMapRef | None, wanted: set[str]
) -> Mapping[str, str] | None:
    """The device-plugin ConfigMap's data: the one `ref` names, else the one holding the keys
    nodes point to (when exactly one does)."""
    if ref is not None:
        for cm in configmaps:
            if f.name(cm) == ref.name and f.namespace(cm) == ref.namespace:
                return dict(cm.get("data") or {})
    holders = [cm for cm in configmaps if wanted & set(cm.get("data") or {})]
    return dict(holders[0].get("data") or {}) if len(holders) == 1 else None


def node(
    obj: Obj,
    plugin_data: Mapping[str, str] | None,
    classes: Iterable[str],
    problems: list[str],
    dra: Mapping[str, int] | None = None,
) -> Node | None:
    """The node; `dra` is the GPU slots by resource its DRA ResourceSlices publish."""
    labels = f.labels_of(obj)
    config_key = labels.get(r.DEVICE_PLUGIN_CONFIG_LABEL) or None
    devices = f.device_amounts(f.dig(obj, "status", "capacity"))
    capacity = devices.get(WHOLE_GPU)
    if dra:
        return _dra_node(obj, classes, devices, dra)
    if not devices and config_key is None:
        return None  # not a GPU node
    replicas = f.int_field(labels.get(r.GPU_REPLICAS_LABEL), 1)
    if config_key is not None:
        if plugin_data is None or config_key not in plugin_data:
            problems.append(
                f"node {f.name(obj)}: device-plugin config key {config_key!r} not found"
            )
        else:
            replicas = replicas_of(plugin_data[config_key])
    # Physical GPUs, except under the single MIG strategy, where GPU feature discovery overrides
    # nvidia.com/gpu.count with the number of MIG devices (its README, "MIG 'single' strategy")
    # and nothing on the node says how many GPUs they come from: there `gpus` counts MIG devices,
    # and every reader goes by `mig` first (capacity, the fleet summary; reshape skips the node).
    physical = f.int_field(labels.get(r.GPU_COUNT_LABEL), int(capacity or 0) // replicas)
    return Node(
        name=f.name(obj),
        gpus=physical,
        replicas=replicas,
        config_key=config_key,
        workload_classes=tuple(sorted(set(classes))),
        last_reshape=f.timestamp(f.annotations_of(obj).get(r.LAST_RESHAPE)),
        reshape_key_at=f.timestamp(f.annotations_of(obj).get(r.RESHAPE_KEY_AT)),
        mig=_mig_offer(labels, devices),
        reshape_reason=f.annotations_of(obj).get(r.RESHAPE_REASON, ""),
        pool=labels.get(r.POOL_LABEL) == "true",
    )


def _dra_node(
    obj: Obj, classes: Iterable[str], devices: Mapping[str, float], dra: Mapping[str, int]
) -> Node:
    """A node whose GPUs (all, or some beside the device plugin's) come from DRA: one slot per
    device, by resource (`Node.mig`), with no time-slice replicas (DRA shares per claim)."""
    offered = {name: int(n) for name, n in devices.items() if n > 0}
    offered.update(dra)
    whole = offered.get(WHOLE_GPU, 0) + sum(n for r, n in dra.items() if "/mig-" not in r)
    return Node(
        name=f.name(obj),
        gpus=whole,
        workload_classes=tuple(sorted(set(classes))),
        last_reshape=f.timestamp(f.annotations_of(obj).get(r.LAST_RESHAPE)),
        mig=MappingProxyType(dict(sorted(offered.items()))),
        dra=True,
    )


def _mig_offer(labels: Mapping[str, str], devices: Mapping[str, float]) -> Mapping[str, int]:
    """A MIG-enabled node's slots per resource (`Node.mig`); empty for a node without MIG.

    MIG-enabled: it advertises `nvidia.com/mig-*` (the `mixed` strategy), or GPU feature discovery
    labels it with the `single` strategy, where its MIG instances are its `nvidia.com/gpu`.
    """
    single = labels.get(r.MIG_STRATEGY_LABEL) == "single"
    if not single and not any(name != WHOLE_GPU for name, n in devices.items() if n > 0):
        return MappingProxyType({})
    return MappingProxyType({name: int(n) for name, n in sorted(devices.items())})
