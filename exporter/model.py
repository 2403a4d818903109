"""Immutable readings that flow from the samplers to the renderer.

A collect cycle produces one `NodeSnapshot`: what NVML said about each device (and each MIG
instance), what attribution said about pods, and how each collector fared. The renderer turns a
snapshot into exposition text once; scrapes only serve that text.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType


def _empty() -> Mapping[str, float]:
    return MappingProxyType({})


def _empty_counts() -> Mapping[int, int]:
    return MappingProxyType({})


@dataclass(frozen=True)
class MigInfo:
    profile: str  # GPU_I_PROFILE, e.g. "1g.10gb"
    gpu_instance_id: int  # GPU_I_ID
    compute_instance_id: int
    parent_index: int  # index of the physical GPU


@dataclass(frozen=True)
class ProcessUsage:
    """One host PID on one device over the last collect interval."""

    pid: int
    sm_util: float  # ratio 0..1, time average over the interval
    mem_util: float  # ratio 0..1, time average over the interval
    memory_bytes: int | None  # None when the driver does not say (e.g. under MIG without privs)


@dataclass(frozen=True)
class DeviceReading:
    """A physical GPU, or one MIG instance of it (then `mig` is set)."""

    index: int  # dcgm-exporter's `gpu` label: the physical GPU index
    uuid: str  # the device's UUID (for MIG: the parent's UUID, as dcgm-exporter labels it)
    pci_bus_id: str
    minor: int  # `device` label is f"nvidia{minor}"
    model_name: str
    driver_version: str
    mig: MigInfo | None = None
    mig_uuid: str | None = None  # MIG-... uuid, used to match kubelet device ids
    values: Mapping[str, float] = field(default_factory=_empty)  # DCGM family -> value
    # None: the processes could not be read (an error, a lost GPU): every pod's usage of the
    # device is unknown this cycle, which is not the same as idle.
    processes: tuple[ProcessUsage, ...] | None = ()
    failed: frozenset[str] = frozenset()  # collectors that failed on this device
    xid_counts: Mapping[int, int] = field(default_factory=_empty_counts)  # XID -> events seen


@dataclass(frozen=True)
class PodRef:
    namespace: str
    pod: str
    container: str


@dataclass(frozen=True)
class PodUsage:
    """Per-pod values on one device, ready to render."""

    ref: PodRef
    device: DeviceReading
    utilization: float  # ratio 0..1; NaN when none of its processes has a known utilization
    memory_bytes: int | None  # None when the device's processes are unknown
    processes: int | None  # None when the device's processes are unknown
    allocated: bool


@dataclass(frozen=True)
class NodeSnapshot:
    hostname: str
    taken_at: float  # Unix seconds
    duration_seconds: float
    devices: tuple[DeviceReading, ...]
    pods: tuple[PodUsage, ...]
    collector_success: Mapping[str, bool]
    errors_total: Mapping[str, int]  # cumulative, by call
