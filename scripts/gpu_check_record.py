"""gpu_check's record of what the exporter saw, and the checks on the collection itself.

`identity` lists the node as the exporter's `NvmlSource` saw it (versions, each device's name,
UUID, MIG mode and memory total, the calls NVML answered NotSupported, FunctionNotFound or
NoPermission); `cycle_record` turns a snapshot into JSON, with when it read each energy
counter; `check_collection` requires devices, their identities, no failed NVML collector or NVML
error in any cycle, and the basic readings on every device.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

from gpu_check_env import Check
from gpu_check_served import memory_total_mib
from gpu_check_timed import ReadTime

from exporter.model import DeviceReading, NodeSnapshot
from exporter.nvml.calls import DeviceCalls
from exporter.nvml.readings import FB_USED, GPU_UTIL, NvmlCollector
from exporter.nvml.source import NvmlSource


def _num(value: float | None) -> float | None:
    return None if value is None or math.isnan(value) else value


def identity(source: NvmlSource, devices: Sequence[DeviceReading]) -> dict[str, Any]:
    """What the source reported about the node, plus versions and MIG mode through its calls."""
    node = DeviceCalls(source.lib, None, {}, {})
    versions = {"driver": devices[0].driver_version if devices else ""}
    for key, call in (
        ("nvml", "nvmlSystemGetNVMLVersion"),
        ("cuda", "nvmlSystemGetCudaDriverVersion"),
    ):
        got = node.call("identity", call)
        versions[key] = str(got.value) if got.ok else "unavailable"
    rows = []
    for d in devices:
        row: dict[str, Any] = {"gpu": d.index, "uuid": d.uuid, "name": d.model_name}
        if d.mig is None:
            calls = DeviceCalls(source.lib, d.index, {}, {})
            handle = calls.call("mig", "nvmlDeviceGetHandleByIndex", d.index)
            mode = calls.call("mig", "nvmlDeviceGetMigMode", handle.value) if handle.ok else handle
            row["mig_mode"] = list(mode.value) if mode.ok else "not supported"
        else:
            row.update(mig_uuid=d.mig_uuid, profile=d.mig.profile, gpu_i_id=d.mig.gpu_instance_id)
        row["memory_total_mib"] = memory_total_mib(d)
        rows.append(row)
    unsupported = sorted(f"{key}: {call}" for key, call in source.unsupported)
    return {
        "versions": versions,
        "device_count": len(rows),
        "devices": rows,
        "not_supported": unsupported,
    }


def _process(p: Any) -> dict[str, Any]:
    return {
        "pid": p.pid,
        "sm": _num(p.sm_util),
        "mem": _num(p.mem_util),
        "memory_bytes": p.memory_bytes,
    }


def cycle_record(s: NodeSnapshot, phase: str, reads: Mapping[str, ReadTime]) -> dict[str, Any]:
    devices = [
        {
            "gpu": d.index,
            "uuid": d.uuid,
            "mig_uuid": d.mig_uuid,
            "failed": sorted(d.failed),
            "values": {k: _num(v) for k, v in sorted(d.values.items())},
            "processes": None if d.processes is None else [_process(p) for p in d.processes],
        }
        for d in s.devices
    ]
    pods = [
        {
            "pod": f"{p.ref.namespace}/{p.ref.pod}/{p.ref.container}",
            "uuid": p.device.uuid,
            "mig_uuid": p.device.mig_uuid,
            "utilization": _num(p.utilization),
            "memory_bytes": p.memory_bytes,
            "processes": p.processes,
            "allocated": p.allocated,
        }
        for p in s.pods
    ]
    return {
        "phase": phase,
        "taken_at": s.taken_at,
        "duration_s": s.duration_seconds,
        "energy_read_monotonic": {u: [r.before, r.after] for u, r in sorted(reads.items())},
        "devices": devices,
        "pods": pods,
        "collector_success": dict(s.collector_success),
        "errors_total": dict(s.errors_total),
    }


def check_collection(snaps: Sequence[NodeSnapshot], ident: dict[str, Any]) -> list[Check]:
    last = snaps[-1].devices
    migs = sum(d.mig is not None for d in last)
    found = Check("devices_found", bool(last), f"{len(last) - migs} GPU(s), {migs} MIG instance(s)")
    bad_id = [r["gpu"] for r in ident["devices"] if not (r["uuid"] and r["name"])]
    driver = ident["versions"]["driver"]
    ids = Check("identity", bool(last and driver) and not bad_id, f"driver {driver!r}; {bad_id=}")
    nvml = {c.value for c in NvmlCollector}
    failed = sorted(
        {
            f"cycle {i}: {c}"
            for i, s in enumerate(snaps)
            for c, ok in s.collector_success.items()
            if c in nvml and not ok
        }
    )
    errors = {c: n for c, n in snaps[-1].errors_total.items() if c.startswith("nvml")}
    errs = Check("nvml_collectors", not failed and not errors, f"failed={failed} errors={errors}")
    missing = missing_readings(last)
    return [found, ids, errs, Check("device_readings", bool(last) and not missing, f"{missing}")]


def missing_readings(devices: Sequence[DeviceReading]) -> list[str]:
    """Memory and utilization on every GPU whose MIG mode is off, memory on every MIG instance
    (a MIG-enabled GPU's memory is its instances'); a process list on every device."""
    mig_parents = {d.mig.parent_index for d in devices if d.mig is not None}
    out = []
    for d in devices:
        whole = d.mig is None and d.index not in mig_parents
        mig_parent = d.mig is None and d.index in mig_parents
        for fam in (FB_USED, GPU_UTIL) if whole else () if mig_parent else (FB_USED,):
            if fam not in d.values:
                out.append(f"{d.mig_uuid or d.uuid}: {fam}")
        if d.processes is None:
            out.append(f"{d.mig_uuid or d.uuid}: processes")
    return out
