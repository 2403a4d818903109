"""Workloads whose pod templates get GPUs through ResourceClaimTemplates, as their size is
counted. Pure.

A suspended or pending workload has no claims yet: only its pod templates say what its pods will
ask for. `template_slots` reads what each ResourceClaimTemplate asks for (`dra`), and
`with_claimed_gpus` gives the slot counters (`fields.pod_spec_slots`) a copy of a workload in
which each pod template referencing such templates carries their GPUs as one more container's
limits, under resources of their own (`dra:<driver>`, never a real extended resource).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from reclaimer.kube.objects import fields as f
from reclaimer.kube.objects.dra import GpuClasses, gpu_classes, index_slices, requested

Obj = f.Obj


def template_slots(
    templates: Sequence[Obj],
    slices: Sequence[Obj],
    device_classes: Sequence[Obj],
    gpus: GpuClasses | None = None,
) -> dict[str, dict[str, int]]:
    """ "namespace/name" of each ResourceClaimTemplate -> the GPU slots its claims ask for."""
    gpus = gpus or GpuClasses()
    index = index_slices(slices, gpus)
    classes = gpu_classes(device_classes, gpus)
    out = {f.key(t): requested(f.dig(t, "spec", "spec"), classes, index) for t in templates}
    return {k: v for k, v in out.items() if v}


def with_claimed_gpus(obj: Obj, slots: Mapping[str, Mapping[str, int]]) -> Obj:
    """A workload whose pod templates get GPUs from ResourceClaimTemplates, as the slot
    counters read it: a copy in which each such pod template carries its templates' GPUs as one
    more container's limits (`fields.pod_spec_slots` counts containers). A claim named by
    `resourceClaimName` is shared and outlives the pods: a new pod needs no devices for it.
    Only for counting; the object is never written back. Without template claims: `obj`."""
    ns = f.namespace(obj)

    def walk(node: Any) -> tuple[Any, bool]:
        if isinstance(node, list):
            items = [walk(v) for v in node]
            return [v for v, _ in items], any(c for _, c in items)
        if not isinstance(node, dict):
            return node, False
        items_ = {k: walk(v) for k, v in node.items()}
        out = {k: v for k, (v, _) in items_.items()}
        changed = any(c for _, c in items_.values())
        claimed: dict[str, int] = {}
        if isinstance(node.get("containers"), list):
            for ref in node.get("resourceClaims") or []:
                name = ref.get("resourceClaimTemplateName") if isinstance(ref, dict) else None
                for res, n in slots.get(f"{ns}/{name}", {}).items() if name else ():
                    claimed[res] = claimed.get(res, 0) + n
        if claimed:
            limits = {res: str(n) for res, n in claimed.items()}
            extra = {"name": "gpu-reclaim.io/dra-claims", "resources": {"limits": limits}}
            out["containers"] = [*out["containers"], extra]
            changed = True
        return out, changed

    copied, changed = walk(obj)
    return copied if changed else obj
