# ruff: noqa: E501  (PromQL reads best on one line)
"""The GPU tenants dashboard: per-namespace and per-queue utilization, per-pod utilization with
shared (time-sliced) GPUs apart, pod memory and processes, idle pods holding GPUs."""

from __future__ import annotations

from panels import RATIO, STACKED, Json, dashboard, panel, row, targets

# Shared GPUs: devices that more than one pod holds (time-slicing).
SHARED = "on (UUID, Hostname) (count by (UUID, Hostname) (gpu_pod_allocated{{{pod}}} > 0) > 1)"


def tenants() -> Json:
    pod_util = "gpu_pod_utilization_ratio{{{pod}}}"
    panels = [
        panel(
            "timeseries",
            "Utilization per namespace (5-minute mean of held GPU slots)",
            targets(("namespace:gpu_pod_utilization_ratio:avg5m{{{ns}}}", "{{namespace}}")),
            (0, 0, 12, 8),
            unit="percentunit",
            minmax=RATIO,
        ),
        panel(
            "timeseries",
            "GPU slots held per namespace",
            targets(
                ("namespace:gpu_pod_allocated:sum{{{ns}}}", "{{namespace}} held"),
                ("namespace:gpu_pod_idle_allocated:sum{{{ns}}}", "{{namespace}} idle"),
            ),
            (12, 0, 12, 8),
        ),
        panel(
            "timeseries",
            "Utilization per Volcano queue",
            targets(
                ("queue:gpu_pod_utilization_ratio:avg5m{{{cl}}}", "{{queue}}"),
            ),
            (0, 8, 12, 8),
            unit="percentunit",
            minmax=RATIO,
            description="Needs kube-state-metrics with the Volcano queue label/annotation allowlisted (see rules/).",
        ),
        panel(
            "timeseries",
            "GPU slots held per Volcano queue",
            targets(
                ("queue:gpu_pod_allocated:sum{{{cl}}}", "{{queue}}"),
            ),
            (12, 8, 12, 8),
        ),
        row("Pods", 16),
        panel(
            "timeseries",
            "Per-pod utilization (busiest GPU)",
            targets((f"max by (namespace, pod) ({pod_util})", "{{namespace}}/{{pod}}")),
            (0, 17, 12, 9),
            unit="percentunit",
            minmax=RATIO,
        ),
        panel(
            "timeseries",
            "Shared GPUs: each pod's share and the device total",
            targets(
                (f"{pod_util} and {SHARED}", "{{Hostname}} gpu{{gpu}} {{namespace}}/{{pod}}"),
                (
                    f"DCGM_FI_DEV_GPU_UTIL{{{{{{dev}}}}}} / 100 and {SHARED}",
                    "{{Hostname}} gpu{{gpu}} device",
                ),
            ),
            (12, 17, 12, 9),
            unit="percentunit",
            custom=STACKED,
            description="Time-sliced GPUs held by more than one pod: per-pod utilization from NVML process samples, stacked.",
        ),
        panel(
            "timeseries",
            "GPU memory per pod",
            targets(
                (
                    "sum by (namespace, pod) (gpu_pod_memory_used_bytes{{{pod}}})",
                    "{{namespace}}/{{pod}}",
                )
            ),
            (0, 26, 12, 8),
            unit="bytes",
        ),
        panel(
            "timeseries",
            "GPU processes per pod",
            targets(
                ("sum by (namespace, pod) (gpu_pod_processes{{{pod}}})", "{{namespace}}/{{pod}}")
            ),
            (12, 26, 12, 8),
        ),
        panel(
            "table",
            "Idle pods holding GPUs (5-minute mean below 5%)",
            targets(
                (
                    "namespace_pod:gpu_pod_utilization_ratio:avg5m{{{ns}}} < 0.05 and on (namespace, pod) namespace_pod:gpu_pod_allocated:max{{{ns}}} > 0",
                    "",
                ),
                instant=True,
            ),
            (0, 34, 24, 8),
            unit="percentunit",
        ),
    ]
    return dashboard(
        "gpu-reclaim-tenants",
        "GPU tenants",
        "Tenant (namespace, queue) and pod drill-down.",
        panels,
    )
