"""DRA allocations named by UUID, so that attribution treats them as any other. Pure.

The kubelet names a device allocated through a ResourceClaim by (driver, pool, device); the
node's ResourceSlices map that to the `uuid` attribute NVML knows the device by (`GPU-...`, or a
MIG device's own `MIG-...`). `resolve` gives each DRA allocation that UUID as its one device id,
after which `attribution` matches it to a reading exactly as it matches a device plugin's id:
a MIG device to its instance, and a claim that several pods share (the driver's time-slicing or
MPS, or one device shared by capacity) to every one of them, each process counted for its own
pod and every unknown-is-not-idle rule in force.

A device the slices publish without a `uuid` is not a GPU (a NIC, say) and is dropped. A device
the slices do not list at all (not published yet, the API unreadable) is *unknown*: its
allocation is left out, so its pod has no series for it (absent, never idle), and it is returned
so that the caller can ask for the slices again and report it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

from exporter.sources import Allocation, DeviceKey, DeviceUuids


@dataclass(frozen=True)
class Resolved:
    allocations: tuple[Allocation, ...]  # device plugin ones as given, DRA ones with their UUID
    unknown: tuple[DeviceKey, ...]  # DRA devices the slices do not list, sorted, no repeats


def resolve(allocations: Sequence[Allocation], uuids: DeviceUuids | None) -> Resolved:
    """Pure: see the module docstring. `uuids` None: the slices were never read."""
    out: list[Allocation] = []
    unknown: set[DeviceKey] = set()
    for alloc in allocations:
        if alloc.claim is None:
            out.append(alloc)
            continue
        key = alloc.claim.key
        if uuids is None or key not in uuids:
            unknown.add(key)
            continue
        uuid = uuids[key]
        if uuid is not None:
            out.append(replace(alloc, device_ids=(uuid,)))
    return Resolved(tuple(out), tuple(sorted(unknown)))
