"""The metric contract between the exporter and the reclaimer, written once.

The exporter publishes exactly these families; the reclaimer, the rules and the dashboards read
them by these names. Device families copy dcgm-exporter's names, units and labels so that its
dashboards and alerts work unchanged; per-pod families follow Prometheus naming (base units,
ratios 0-1). The DCGM families, which series carry each on a MIG-enabled GPU, and the
dcgm-exporter defaults left out are in `gpu_contract.dcgm`. `tests/test_contract_doc.py` checks
that docs/metrics.md's table matches this module.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from enum import StrEnum

from gpu_contract.dcgm import DCGM_FAMILIES
from gpu_contract.dcgm import LEFT_OUT as LEFT_OUT
from gpu_contract.dcgm import MigScope as MigScope


class Kind(StrEnum):
    GAUGE = "gauge"
    COUNTER = "counter"


class Source(StrEnum):
    DCGM = "dcgm-compatible"
    POD = "per-pod"
    DEVICE = "device (gpu-exporter)"
    SELF = "exporter self-metric"
    RECLAIMER = "reclaimer self-metric"


# dcgm-exporter's device labels, in its order. MIG devices add MIG_LABELS.
DEVICE_LABELS: tuple[str, ...] = (
    "gpu",
    "UUID",
    "pci_bus_id",
    "device",
    "modelName",
    "Hostname",
    "DCGM_FI_DRIVER_VERSION",
)
MIG_LABELS: tuple[str, ...] = ("GPU_I_PROFILE", "GPU_I_ID")
POD_LABELS: tuple[str, ...] = ("namespace", "pod", "container", "gpu", "UUID", "Hostname")
POD_MIG_LABELS: tuple[str, ...] = ("GPU_I_ID",)


@dataclass(frozen=True)
class MetricSpec:
    """One metric family: its exact exposed name, type, unit, labels and meaning."""

    name: str
    kind: Kind
    unit: str
    help: str
    source: Source
    labels: tuple[str, ...]
    mig_labels: tuple[str, ...] = ()
    mig_scope: MigScope | None = None  # device families: which series carry it under MIG


def _dev(name: str, kind: str, unit: str, help_: str, scope: MigScope) -> MetricSpec:
    mig = MIG_LABELS if scope in (MigScope.INSTANCES, MigScope.BOTH) else ()
    return MetricSpec(name, Kind(kind), unit, help_, Source.DCGM, DEVICE_LABELS, mig, scope)


def _pod(name: str, unit: str, help_: str) -> MetricSpec:
    return MetricSpec(name, Kind.GAUGE, unit, help_, Source.POD, POD_LABELS, POD_MIG_LABELS)


G, C = Kind.GAUGE, Kind.COUNTER

DEVICE_METRICS: tuple[MetricSpec, ...] = tuple(_dev(*row) for row in DCGM_FAMILIES)
DCGM_NAMES: frozenset[str] = frozenset(m.name for m in DEVICE_METRICS)

# Every XID event, counted by device and XID value: the XID alerts read it (the last-XID gauge
# cannot tell a repeated XID, nor when it came). The `xid` series appears at its first event.
XID_EVENTS = MetricSpec(
    "gpu_xid_errors_total",
    C,
    "",
    "XID errors reported by the driver since the exporter started, by device and XID.",
    Source.DEVICE,
    (*DEVICE_LABELS, "xid"),
    MIG_LABELS,
    MigScope.BOTH,
)

POD_METRICS: tuple[MetricSpec, ...] = (
    _pod(
        "gpu_pod_utilization_ratio",
        "ratio",
        "Share of the GPU's time this pod's processes kept it busy over the last collect interval.",
    ),
    _pod("gpu_pod_memory_used_bytes", "bytes", "GPU memory used by this pod's processes."),
    _pod("gpu_pod_allocated", "", "1 for every pod the kubelet allocated this device to."),
    _pod("gpu_pod_processes", "", "Number of this pod's processes on the device."),
)

SELF_METRICS: tuple[MetricSpec, ...] = (
    MetricSpec(
        "gpu_exporter_collector_success",
        G,
        "",
        "1 when the collector's last cycle succeeded on every device, 0 otherwise.",
        Source.SELF,
        ("collector",),
    ),
    MetricSpec(
        "gpu_exporter_collect_duration_seconds",
        G,
        "seconds",
        "Duration of the last collect cycle.",
        Source.SELF,
        (),
    ),
    MetricSpec(
        "gpu_exporter_last_collect_timestamp_seconds",
        G,
        "seconds",
        "Unix time of the last completed collect cycle.",
        Source.SELF,
        (),
    ),
    MetricSpec(
        "gpu_exporter_errors_total",
        C,
        "",
        "Errors returned by calls to NVML, the kubelet and /proc, by call.",
        Source.SELF,
        ("call",),
    ),
)


def _rec(name: str, kind: Kind, unit: str, help_: str, labels: tuple[str, ...] = ()) -> MetricSpec:
    return MetricSpec(name, kind, unit, help_, Source.RECLAIMER, labels)


RECLAIMER_METRICS: tuple[MetricSpec, ...] = (
    _rec("gpu_reclaimer_cycle_duration_seconds", G, "seconds", "Duration of the last cycle."),
    _rec(
        "gpu_reclaimer_last_success_timestamp_seconds",
        G,
        "seconds",
        "Unix time of the last cycle that completed with complete, fresh data.",
    ),
    _rec(
        "gpu_reclaimer_cycles_total",
        C,
        "",
        "Cycles by result: success, skipped (stale or incomplete data) or error.",
        ("result",),
    ),
    _rec(
        "gpu_reclaimer_actions_planned_total",
        C,
        "",
        "Actions planned, by kind and reason (counted in dry-run too).",
        ("kind", "reason"),
    ),
    _rec(
        "gpu_reclaimer_actions_applied_total",
        C,
        "",
        "Actions applied to the cluster (server-side dry-run when dry_run is 1).",
        ("kind", "reason"),
    ),
    _rec(
        "gpu_reclaimer_actions_failed_total",
        C,
        "",
        "Actions that failed or were refused (PDB, conflict, API error).",
        ("kind", "reason"),
    ),
    _rec("gpu_reclaimer_dry_run", G, "", "1 while the reclaimer runs in dry-run mode."),
    _rec("gpu_reclaimer_is_leader", G, "", "1 while this replica holds the leader lease."),
    _rec(
        "gpu_reclaimer_forecasts",
        G,
        "",
        "Jobs in the last cycle's forecast, by outcome: idle, busy or unknown.",
        ("outcome",),
    ),
    _rec(
        "gpu_reclaimer_forecast_checks_total",
        C,
        "",
        "Idle forecasts checked after their horizon, by result: correct or wrong.",
        ("result",),
    ),
    _rec(
        "gpu_reclaimer_reclaimed_gpu_seconds_total",
        C,
        "seconds",
        "GPU-seconds freed by completed preemptions: stopped, pods gone (would-be, in dry-run).",
    ),
    _rec(
        "gpu_reclaimer_gpus_releasing",
        G,
        "",
        "GPU slots still held by pods on their way out (stopped jobs, pods being deleted).",
    ),
    _rec(
        "gpu_reclaimer_releases_overdue",
        G,
        "",
        "Jobs the reclaimer stopped whose pods still hold GPUs after releaseTimeout.",
    ),
    _rec(
        "gpu_reclaimer_jobs_usage_unknown",
        G,
        "",
        "GPU jobs whose recent utilization has missing samples: never taken as idle.",
    ),
    _rec(
        "gpu_reclaimer_policy_rejected",
        G,
        "",
        "1 while the policy file's current version is invalid and the last good one is in force.",
    ),
    _rec(
        "gpu_reclaimer_notifications_total",
        C,
        "",
        "Webhook notifications of warnings before a stop, by result: sent or failed.",
        ("result",),
    ),
)

ALL_METRICS: tuple[MetricSpec, ...] = (
    *DEVICE_METRICS,
    XID_EVENTS,
    *POD_METRICS,
    *SELF_METRICS,
    *RECLAIMER_METRICS,
)

# Recording rules (rules/) that the reclaimer prefers when present. Same labels as the source.
RECORDED_POD_UTILIZATION_5M = "namespace_pod:gpu_pod_utilization_ratio:avg5m"
RECORDED_POD_ALLOCATED = "namespace_pod:gpu_pod_allocated:max"
# Each pod's Volcano queue (label `queue`), joined from kube-state-metrics where it runs.
RECORDED_POD_QUEUE = "namespace_pod:volcano_queue:info"
BY_NAME: dict[str, MetricSpec] = {m.name: m for m in ALL_METRICS}

# Names the reclaimer queries.
POD_UTILIZATION = "gpu_pod_utilization_ratio"
POD_ALLOCATED = "gpu_pod_allocated"
POD_MEMORY = "gpu_pod_memory_used_bytes"
DCGM_GPU_UTIL = "DCGM_FI_DEV_GPU_UTIL"
DCGM_FB_USED = "DCGM_FI_DEV_FB_USED"
DCGM_FB_FREE = "DCGM_FI_DEV_FB_FREE"


def markdown_table() -> str:
    """The README's metric-contract table, rendered from ALL_METRICS."""
    rows = [
        "| metric | type | unit | labels | source | on a MIG GPU |",
        "| --- | --- | --- | --- | --- | --- |",
    ]
    for m in ALL_METRICS:
        labels = ", ".join(f"`{label}`" for label in m.labels)
        if m.mig_labels:
            labels += " (+ " + ", ".join(f"`{label}`" for label in m.mig_labels) + " on MIG)"
        scope = m.mig_scope or "-"
        rows.append(
            f"| `{m.name}` | {m.kind} | {m.unit or '-'} | {labels or '-'} | {m.source} | {scope} |"
        )
    return "\n".join(rows)


# `promtool check metrics` complaints that dcgm-exporter compatibility forces on DCGM's own
# families: its counters have no `_total` suffix (one is even named ..._COUNTER) and it labels
# `modelName`. Anything else promtool says about a scrape is a real problem.
DCGM_ONLY_COMPLAINTS = (
    re.compile(r'^DCGM_FI_\w+ counter metrics should have "_total" suffix$'),
    re.compile(r"^DCGM_FI_\w+ label names should be written in 'snake_case' not 'camelCase'$"),
    re.compile(r"^DCGM_FI_DEV_PCIE_REPLAY_COUNTER metric name should not include type 'counter'$"),
)
_SAMPLE_LABELS = re.compile(r"^[^#{]+\{(.*)\} ", re.M)
_LABEL_NAME = re.compile(r'(?:^|,)(\w+)="')


def promtool_problems(findings: Iterable[str], exposition: str) -> list[str]:
    """promtool's `findings` on `exposition`, less the DCGM-compatibility ones above.

    The camelCase complaint does not name the label, so label names are checked here too:
    `modelName` must be the only camelCase one.
    """
    problems = [
        line for line in findings if not any(p.match(line.strip()) for p in DCGM_ONLY_COMPLAINTS)
    ]
    names = {n for m in _SAMPLE_LABELS.finditer(exposition) for n in _LABEL_NAME.findall(m[1])}
    problems += [f"camelCase label {n}" for n in sorted(names) if re.search("[a-z][A-Z]", n)]
    return [p for p in problems if p != "camelCase label modelName"]
