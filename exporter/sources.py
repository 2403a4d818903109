"""Where a collect cycle's inputs come from, as protocols the backends implement.

A backend (nvml, sim, replay) provides a `DeviceSource` (NVML readings, blocking, run in a
thread) and the attribution inputs: a /proc root to read `<pid>/cgroup` from, the kubelet's
PodResources allocations and the node's pods (UID -> identity). The `sim` and `replay` backends
write fixture files for the last three so that attribution runs the same code as on a real node.

The values those inputs yield (`Allocation`, `PodIndex`, `CgroupRef`) are defined here, not in
the readers of `exporter.node`, so that pure attribution depends on data, never on I/O code.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType
from typing import Protocol

from exporter.model import DeviceReading


@dataclass(frozen=True)
class DeviceSweep:
    devices: tuple[DeviceReading, ...]
    collector_success: Mapping[str, bool] = field(default_factory=lambda: MappingProxyType({}))
    errors: Mapping[str, int] = field(default_factory=lambda: MappingProxyType({}))  # this sweep


class DeviceSource(Protocol):
    def read(self) -> DeviceSweep:
        """Blocking: sample every device once. Never raises for a per-device failure."""
        ...

    def watch(self, families: frozenset[str] | None) -> None:
        """Sample only what the DCGM `families` served (None: all) and the per-pod ones need."""
        ...

    def close(self) -> None: ...


@dataclass(frozen=True)
class ClaimDevice:
    """One device a container holds through a ResourceClaim (Dynamic Resource Allocation), as
    PodResources v1 names it: by driver, pool and device, never by UUID (a node's
    ResourceSlices give the UUID). `share_id` is set when the device is shared by capacity."""

    claim_namespace: str
    claim_name: str
    driver: str  # e.g. gpu.nvidia.com
    pool: str
    device: str  # e.g. gpu-0, or a MIG device's name
    share_id: str | None = None

    @property
    def key(self) -> DeviceKey:
        return (self.driver, self.pool, self.device)


DeviceKey = tuple[str, str, str]  # driver, pool, device: how DRA names a device
# A node's DRA devices (driver, pool, device) -> the UUID NVML knows them by (GPU-..., MIG-...);
# None for a published device without a `uuid` attribute (a NIC, say: not a GPU, not an error).
DeviceUuids = Mapping[DeviceKey, str | None]


@dataclass(frozen=True)
class Allocation:
    """One container's devices, as the kubelet's PodResources `List` reports them.

    A device plugin's allocation names its resource and device ids. A DRA allocation names its
    driver as `resource_name` and the device in `claim`; its `device_ids` stay empty until the
    node's ResourceSlices give the device's UUID (`exporter.claims.resolve`)."""

    namespace: str
    pod: str
    container: str
    resource_name: str  # nvidia.com/gpu or nvidia.com/mig-1g.10gb ..., or a DRA driver's name
    device_ids: tuple[str, ...]  # GPU-<uuid>, GPU-<uuid>::<n>, MIG-<uuid>
    claim: ClaimDevice | None = None


@dataclass(frozen=True)
class PodIdentity:
    uid: str
    namespace: str
    name: str


def _no_containers() -> Mapping[str, str]:
    return MappingProxyType({})


@dataclass(frozen=True)
class PodIndex:
    """The node's pods as a pod source knows them: by UID, and container runtime id -> name."""

    by_uid: Mapping[str, PodIdentity]
    container_names: Mapping[str, str] = field(default_factory=_no_containers)


@dataclass(frozen=True)
class CgroupRef:
    """A process's pod UID (always with dashes) and container runtime id when known, as its
    `/proc/<pid>/cgroup` names them."""

    pod_uid: str
    container_id: str | None


@dataclass(frozen=True)
class BackendParts:
    """Everything a backend hands the collect loop.

    `podresources_file` and `pods_file` are JSON fixtures (a list of `Allocation` / `PodIdentity`
    objects as dicts with the same field names) written by `sim`/`replay`; when they are None the
    collect loop uses the kubelet PodResources socket and the Kubernetes API instead.
    """

    devices: DeviceSource
    proc_root: Path
    podresources_file: Path | None = None
    pods_file: Path | None = None
