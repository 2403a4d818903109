"""The Prometheus text exposition (format 0.0.4) of one `NodeSnapshot`, built once per cycle.

Scrapes serve these bytes (and their gzip) as they are, so a scrape costs a memory copy, not an
encode. Rendering is plain string building: each device's and each pod's label set is escaped and
joined once, then reused for every family. Names, types and HELP texts come from `gpu_contract`.

Exactness over convention where dcgm-exporter compatibility needs it: DCGM counters keep their
names without `_total` (prometheus_client would append it) and device series never carry pod
labels. Per-pod families carry `namespace`, `pod`, `container`, `gpu`, `UUID`, `Hostname`, plus
`GPU_I_ID` on MIG instances. A per-pod value that is unknown (NaN utilization; None memory and
process count on a device whose processes could not be read) is left out, not written as NaN or
0, so that sums and averages over pods stay numbers and nothing unknown reads as idle; the pod's
other series remain.
"""

from __future__ import annotations

import gzip
import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TypeVar

from exporter.model import DeviceReading, NodeSnapshot, PodRef, PodUsage
from gpu_contract import (
    DEVICE_METRICS,
    POD_METRICS,
    SELF_METRICS,
    XID_EVENTS,
    MetricSpec,
)

CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"
GZIP_LEVEL = 6

_POD_VALUES: dict[str, Callable[[PodUsage], float | None]] = {
    "gpu_pod_utilization_ratio": lambda p: p.utilization,
    "gpu_pod_memory_used_bytes": lambda p: p.memory_bytes,
    "gpu_pod_allocated": lambda p: 1 if p.allocated else 0,
    "gpu_pod_processes": lambda p: p.processes,
}
_SELF = {m.name: m for m in SELF_METRICS}
# Families an instance's series may carry (the rest belong to the whole GPU: gpu_contract.dcgm).
_ON_INSTANCES = frozenset(m.name for m in DEVICE_METRICS if m.mig_labels)
_Row = TypeVar("_Row", DeviceReading, PodUsage)


@dataclass(frozen=True)
class Exposition:
    """One cycle's rendering, ready to serve."""

    body: bytes
    gzipped: bytes
    taken_at: float


def escape_label_value(value: str) -> str:
    if "\\" in value or '"' in value or "\n" in value:
        return value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")
    return value


def escape_help(text: str) -> str:
    return text.replace("\\", "\\\\").replace("\n", "\\n")


def format_value(value: float) -> str:
    if isinstance(value, int):
        return str(value)
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "+Inf" if value > 0 else "-Inf"
    if value.is_integer() and abs(value) < 1e15:
        return str(int(value))
    return repr(value)


def device_label_values(device: DeviceReading, hostname: str) -> dict[str, str]:
    values = {
        "gpu": str(device.index),
        "UUID": device.uuid,
        "pci_bus_id": device.pci_bus_id,
        "device": f"nvidia{device.minor}",
        "modelName": device.model_name,
        "Hostname": hostname,
        "DCGM_FI_DRIVER_VERSION": device.driver_version,
    }
    if device.mig is not None:
        values["GPU_I_PROFILE"] = device.mig.profile
        values["GPU_I_ID"] = str(device.mig.gpu_instance_id)
    return values


def series_labels(
    spec: MetricSpec,
    device: DeviceReading,
    hostname: str,
    pod: PodRef | None = None,
    extra: Mapping[str, str] | None = None,
) -> str:
    """The escaped label set of one series of `spec`: the device's labels (and the pod's, for a
    per-pod family; `extra` for others, e.g. `xid`), plus the family's MIG labels on a MIG
    instance. Also used by the backfill."""
    values = device_label_values(device, hostname)
    values.update(extra or {})
    if pod is not None:
        values.update(namespace=pod.namespace, pod=pod.pod, container=pod.container)
    names = spec.labels + (spec.mig_labels if device.mig is not None else ())
    return ",".join(f'{n}="{escape_label_value(values[n])}"' for n in names)


def _family(out: list[str], spec: MetricSpec, samples: list[str]) -> None:
    if samples:
        out.append(f"# HELP {spec.name} {escape_help(spec.help)}\n# TYPE {spec.name} {spec.kind}\n")
        out.extend(samples)


def _families(
    out: list[str],
    specs: Iterable[MetricSpec],
    rows: Sequence[_Row],
    labels_of: Callable[[_Row, MetricSpec], str],
    value_of: Callable[[_Row, str], float | None],
) -> None:
    """One family per spec, one sample per row whose value is not None. Each row's label set is
    built once per distinct (labels, MIG labels) of the specs (the contract has one per group)."""
    by_label_set: dict[tuple[tuple[str, ...], tuple[str, ...]], list[str]] = {}
    for spec in specs:
        key = (spec.labels, spec.mig_labels)
        labels = by_label_set.get(key)
        if labels is None:
            labels = by_label_set[key] = [labels_of(row, spec) for row in rows]
        name = spec.name
        samples = []
        for row, lab in zip(rows, labels, strict=True):
            value = value_of(row, name)
            if value is not None:
                samples.append(f"{name}{{{lab}}} {format_value(value)}\n")
        _family(out, spec, samples)


def _pod_value(pod: PodUsage, name: str) -> float | None:
    value = _POD_VALUES[name](pod)
    return None if value is None or math.isnan(value) else value


def _self_families(out: list[str], snapshot: NodeSnapshot) -> None:
    spec = _SELF["gpu_exporter_collector_success"]
    _family(
        out,
        spec,
        [
            f'{spec.name}{{collector="{escape_label_value(c)}"}} {1 if ok else 0}\n'
            for c, ok in sorted(snapshot.collector_success.items())
        ],
    )
    spec = _SELF["gpu_exporter_collect_duration_seconds"]
    _family(out, spec, [f"{spec.name} {format_value(snapshot.duration_seconds)}\n"])
    spec = _SELF["gpu_exporter_last_collect_timestamp_seconds"]
    _family(out, spec, [f"{spec.name} {format_value(snapshot.taken_at)}\n"])
    spec = _SELF["gpu_exporter_errors_total"]
    _family(
        out,
        spec,
        [
            f'{spec.name}{{call="{escape_label_value(call)}"}} {n}\n'
            for call, n in sorted(snapshot.errors_total.items())
        ],
    )


def _device_value(device: DeviceReading, name: str) -> float | None:
    if device.mig is not None and name not in _ON_INSTANCES:
        return None
    return device.values.get(name)


def _xid_events(out: list[str], devices: Sequence[DeviceReading], host: str) -> None:
    """gpu_xid_errors_total: one series per (device, XID value) seen."""
    spec = XID_EVENTS
    samples = []
    for d in devices:
        for xid, n in sorted(d.xid_counts.items()):
            labels = series_labels(spec, d, host, extra={"xid": str(xid)})
            samples.append(f"{spec.name}{{{labels}}} {n}\n")
    _family(out, spec, samples)


def exposition_text(snapshot: NodeSnapshot, families: frozenset[str] | None = None) -> str:
    """Pure: the exposition text of a snapshot; `families` (None: all) chooses the DCGM ones."""
    out: list[str] = []
    host = snapshot.hostname
    _families(
        out,
        [m for m in DEVICE_METRICS if families is None or m.name in families],
        snapshot.devices,
        lambda d, spec: series_labels(spec, d, host),
        _device_value,
    )
    _xid_events(out, snapshot.devices, host)
    _families(
        out,
        POD_METRICS,
        snapshot.pods,
        lambda p, spec: series_labels(spec, p.device, host, p.ref),
        _pod_value,
    )
    _self_families(out, snapshot)
    return "".join(out)


def exposition(snapshot: NodeSnapshot, families: frozenset[str] | None = None) -> Exposition:
    """Pure: the bytes a scrape will serve, plain and gzipped (deterministic: mtime 0)."""
    body = exposition_text(snapshot, families).encode()
    return Exposition(body, gzip.compress(body, GZIP_LEVEL, mtime=0), snapshot.taken_at)
