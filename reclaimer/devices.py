"""Device resources a pod can ask for: whole GPUs (`nvidia.com/gpu`) and MIG instances. Pure.

With the NVIDIA device plugin's `mixed` MIG strategy a pod asks for `nvidia.com/mig-<profile>`
(e.g. `nvidia.com/mig-1g.10gb`) and a node advertises each profile as its own resource; with the
`single` strategy the node's MIG instances are advertised as `nvidia.com/gpu`. Capacity and demand
are therefore counted per resource: a slot of one resource never holds a pod asking for another.

GPUs allocated through Dynamic Resource Allocation are resources of their own (`dra_resource`):
`dra:<driver>` for whole GPUs, `dra:<driver>/mig-<profile>` for MIG devices
(`reclaimer.kube.objects.dra`).

`Pod.gpus`, `Job.gpus` and `PendingDemand.gpus` count slots of every device resource together
(what queue shares count); their `mig` maps the part that asks for any resource other than
`nvidia.com/gpu` (MIG profiles, DRA devices). A gang whose pods
ask for more than one resource is *mixed*: its resource key joins the names with `+` (no resource
name holds one), and room is never made for it (see docs/planning.md).
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import Final

WHOLE_GPU: Final = "nvidia.com/gpu"
MIG_PREFIX: Final = "nvidia.com/mig-"
DRA_PREFIX: Final = "dra:"  # no extended resource name holds a colon
MIXED_SEPARATOR: Final = "+"
NO_MIG: Mapping[str, int] = MappingProxyType({})


def is_mig(resource: str) -> bool:
    return resource.startswith(MIG_PREFIX)


def dra_resource(driver: str, profile: str = "") -> str:
    """GPUs a DRA driver allocates, as a device resource of their own: `dra:gpu.nvidia.com`,
    and `dra:gpu.nvidia.com/mig-<profile>` for its MIG devices. A pod whose claim asks for them
    cannot use a device-plugin slot, nor the other way round, so they are never counted as one."""
    return f"{DRA_PREFIX}{driver}" + (f"/mig-{profile}" if profile else "")


def is_dra(resource: str) -> bool:
    return resource.startswith(DRA_PREFIX)


def is_dra_gpu(resource: str) -> bool:
    """A whole GPU allocated through DRA (not one of its MIG devices)."""
    return is_dra(resource) and "/mig-" not in resource


def slots_by_resource(gpus: int, mig: Mapping[str, int]) -> dict[str, int]:
    """Slots per device resource for `gpus` slots of which `mig` ask for MIG profiles."""
    out = {WHOLE_GPU: gpus - sum(mig.values())}
    out.update(mig)
    return {r: n for r, n in sorted(out.items()) if n > 0}


def resource_key(gpus: int, mig: Mapping[str, int]) -> str:
    """The one resource these slots ask for, or the names joined with `+` when they are mixed."""
    return MIXED_SEPARATOR.join(slots_by_resource(gpus, mig)) or WHOLE_GPU


def is_mixed(key: str) -> bool:
    return MIXED_SEPARATOR in key


def count(n: int | float, noun: str) -> str:
    """`n` with `noun` ("GPUs", "GPU slots", "MIG instances") in the right number: 1 GPU, 2 GPUs."""
    text = f"{n:g}"
    if text == "1" and noun.endswith("s"):
        noun = noun[:-1]
    return f"{text} {noun}"


def amount(n: int | float, resource: str) -> str:
    """`n` slots of `resource` in words: "2 GPU slots", "1 MIG instance (nvidia.com/mig-1g.10gb)".

    A request for `nvidia.com/gpu` is a slot, a whole GPU only where the node does not time-slice.
    """
    if resource == WHOLE_GPU:
        return count(n, "GPU slots")
    if is_mig(resource):
        return f"{count(n, 'MIG instances')} ({resource})"
    if is_dra(resource):
        noun = "MIG devices" if "/mig-" in resource else "GPUs"
        return f"{count(n, noun)} through DRA ({resource.removeprefix(DRA_PREFIX)})"
    return f"{count(n, 'slots')} ({resource})"


def amounts(slots: Mapping[str, int]) -> str:
    """Slots of several resources in words, "0 GPU slots" for none."""
    return ", ".join(amount(n, r) for r, n in sorted(slots.items())) or amount(0, WHOLE_GPU)
