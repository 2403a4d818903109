"""Per-pod GPU usage from device readings, kubelet allocations and process owners. Pure.

Inputs, all read by the collect loop before this runs: the devices with their processes (host
PIDs), the kubelet's allocations (namespace/pod/container -> device ids), each PID's pod UID and
container id from its cgroup, and the node's pods (UID -> namespace/name), absent when the API is
unavailable. Output: one `PodUsage` per (pod, container, device) for every container that holds
the device or runs a process on it.

Rules:
- Device ids match a reading by UUID (`GPU-<uuid>`), by MIG UUID (`MIG-<uuid>`) or by the legacy
  `MIG-GPU-<uuid>/<gi>/<ci>` form; time-sliced replicas `<id>::<n>` count as the device itself.
- A process belongs to the pod its cgroup names. When that pod is unknown (no API, stale index,
  unreadable cgroup) and exactly one pod holds the device, the process is that pod's; otherwise it
  is left out of the per-pod series (the device series still count it).
- Every holder appears, with utilization 0 when it runs nothing (`allocated`=True).
- A pod's utilization is the sum of its processes' time-averaged SM utilization. The pods of one
  device never add up to more than the whole device: when they do (the driver samples each
  process on its own clock), all are scaled down to 1. Never to the device's
  `DCGM_FI_DEV_GPU_UTIL`: that is the driver's last sample period (1/6 s to 1 s, nvml.h
  `nvmlUtilization_t`), not the collect interval the processes' averages cover, so a GPU that
  ends an interval quiet would scale a pod that was busy through it down to near idle.
- A process whose utilization is unknown (NaN: process utilization unsupported or failed, junk
  rows only, or a MIG instance before its second GPM sample) adds nothing to its pod's sum; a pod
  whose processes are all unknown has utilization NaN (the renderer omits that sample; memory and
  allocation stay).
- Unknown is not idle: on a device whose processes could not be read (`processes` None: the
  process list failed, the GPU is lost) every holder gets utilization NaN and no memory or
  process count, only `allocated`, so nothing reads it as idle.
- Unowned busy time is unknown, not idle: when a process on a shared device has busy time (SM
  utilization above 0, or unknown) and cannot be given to a pod (`/proc/<pid>` gone, cgroup
  unreadable, API server down and more than one pod holding the device), it may be any pod's.
  Every pod of that device then gets utilization NaN and no memory or process count, exactly as
  on an unreadable device; giving the holders without an attributed process 0.0 would show a
  90%-busy GPU as four idle pods. An unowned process with 0 utilization changes nothing.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from exporter.model import DeviceReading, PodRef, PodUsage
from exporter.sources import Allocation, CgroupRef, PodIndex

_Key = tuple[str, str, str]  # namespace, pod, container


@dataclass
class _Acc:
    utilization: float = 0.0
    memory_bytes: int = 0
    processes: int = 0
    measured: int = 0  # processes with a known utilization
    allocated: bool = False

    def ratio(self, scale: float) -> float:
        return self.utilization * scale if self.measured or not self.processes else math.nan


def device_ids(device: DeviceReading) -> tuple[str, ...]:
    """The kubelet device ids that name this reading."""
    if device.mig is None:
        return (device.uuid,)
    ids = [f"MIG-{device.uuid}/{device.mig.gpu_instance_id}/{device.mig.compute_instance_id}"]
    if device.mig_uuid:
        ids.append(device.mig_uuid)
    return tuple(ids)


def holders_by_device(
    devices: Sequence[DeviceReading], allocations: Sequence[Allocation]
) -> list[list[_Key]]:
    """For each device (same order), the containers allocated to it, sorted, without repeats."""
    position = {key: i for i, d in enumerate(devices) for key in device_ids(d)}
    holders: list[set[_Key]] = [set() for _ in devices]
    for alloc in allocations:
        for raw in alloc.device_ids:
            i = position.get(raw.split("::", 1)[0])
            if i is not None:
                holders[i].add((alloc.namespace, alloc.pod, alloc.container))
    return [sorted(h) for h in holders]


def _owner_pod(
    ref: CgroupRef | None, index: PodIndex | None, held: Sequence[_Key]
) -> tuple[str, str] | None:
    if ref is not None and index is not None:
        ident = index.by_uid.get(ref.pod_uid)
        if ident is not None:
            return ident.namespace, ident.name
    pods = {(ns, pod) for ns, pod, _ in held}
    if len(pods) == 1:
        return next(iter(pods))
    return None


def _container(
    pod: tuple[str, str], ref: CgroupRef | None, index: PodIndex | None, held: Sequence[_Key]
) -> str:
    mine = [c for ns, p, c in held if (ns, p) == pod]
    if ref is not None and ref.container_id and index is not None:
        name = index.container_names.get(ref.container_id)
        if name is not None and (not mine or name in mine):
            return name
    return mine[0] if mine else ""


def _unknown(device: DeviceReading, rows: Mapping[_Key, bool]) -> list[PodUsage]:
    """Rows (key -> allocated) whose usage cannot be known: NaN, no memory or process count."""
    return [
        PodUsage(PodRef(*key), device, math.nan, None, None, allocated=allocated)
        for key, allocated in sorted(rows.items())
    ]


def _device_usage(
    device: DeviceReading,
    held: Sequence[_Key],
    owners: Mapping[int, CgroupRef],
    index: PodIndex | None,
) -> list[PodUsage]:
    if device.processes is None:
        return _unknown(device, dict.fromkeys(held, True))
    acc: dict[_Key, _Acc] = {key: _Acc(allocated=True) for key in held}
    unowned_busy = False
    for proc in device.processes:
        ref = owners.get(proc.pid)
        pod = _owner_pod(ref, index, held)
        if pod is None:
            unowned_busy = unowned_busy or not proc.sm_util <= 0.0  # NaN counts as busy
            continue
        key = (*pod, _container(pod, ref, index, held))
        entry = acc.setdefault(key, _Acc())
        if not math.isnan(proc.sm_util):
            entry.utilization += max(proc.sm_util, 0.0)
            entry.measured += 1
        entry.memory_bytes += proc.memory_bytes or 0
        entry.processes += 1
    if unowned_busy:
        return _unknown(device, {key: a.allocated for key, a in acc.items()})
    total = sum(a.utilization for a in acc.values())
    scale = 1.0 / total if total > 1.0 else 1.0
    return [
        PodUsage(
            ref=PodRef(ns, pod, container),
            device=device,
            utilization=a.ratio(scale),
            memory_bytes=a.memory_bytes,
            processes=a.processes,
            allocated=a.allocated,
        )
        for (ns, pod, container), a in sorted(acc.items())
    ]


def attribute(
    devices: Sequence[DeviceReading],
    allocations: Sequence[Allocation],
    owners: Mapping[int, CgroupRef],
    index: PodIndex | None,
) -> tuple[PodUsage, ...]:
    """Pure: per-pod usage of every device. Consumed by the collect loop, rendered by `render`."""
    holders = holders_by_device(devices, allocations)
    out: list[PodUsage] = []
    for device, held in zip(devices, holders, strict=True):
        out.extend(_device_usage(device, held, owners, index))
    return tuple(out)
