# ruff: noqa: E501  (PromQL reads best on one line)
"""The GPU fleet dashboard: utilization over time, GPUs by 20% bucket, idle GPU-hours per tenant,
memory, power, temperature, profiling ratios and exporter health (device families of gpu_contract
filtered by $cluster and $node; tenant panels by $namespace)."""

from __future__ import annotations

from panels import PCT, RATIO, STACKED, Json, dashboard, panel, row, targets

BUCKETS = ((0, 20), (20, 40), (40, 60), (60, 80), (80, 101))
# Each GPU's utilization in %, MIG-enabled GPUs included (as rules/' gpu:utilization_percent:avg5m):
# NVML has no DCGM_FI_DEV_GPU_UTIL under MIG, so their own series' graphics-engine activity.
GPU_UTIL = (
    'DCGM_FI_DEV_GPU_UTIL{{{dev}}} or 100 * DCGM_FI_PROF_GR_ENGINE_ACTIVE{{{dev}, GPU_I_ID=""}}'
)
GPU_UTIL_5M = 'avg_over_time(DCGM_FI_DEV_GPU_UTIL{{{dev}}}[5m]) or 100 * avg_over_time(DCGM_FI_PROF_GR_ENGINE_ACTIVE{{{dev}, GPU_I_ID=""}}[5m])'


def _bucket_targets() -> list[Json]:
    util = f"({GPU_UTIL_5M})"
    pairs = [
        (f"count({util} >= {lo} < {hi}) or vector(0)", f"{lo}-{min(hi, 100)}%")
        for lo, hi in BUCKETS
    ]
    return targets(*pairs, instant=True)


def fleet() -> Json:
    util = f"({GPU_UTIL})"
    panels = [
        panel("stat", "GPUs", targets((f"count({util})", "")), (0, 0, 4, 4)),
        panel(
            "stat",
            "Mean utilization",
            targets((f"avg({util})", "")),
            (4, 0, 4, 4),
            unit="percent",
            minmax=PCT,
        ),
        panel(
            "stat",
            "GPU slots allocated to pods",
            targets(("sum(gpu_pod_allocated{{{pod}}})", "")),
            (8, 0, 4, 4),
        ),
        panel(
            "stat",
            "Allocated slots idle (<5%)",
            targets(("sum(namespace:gpu_pod_idle_allocated:sum{{{ns}}})", "")),
            (12, 0, 4, 4),
        ),
        panel(
            "stat",
            "Power draw",
            targets(("sum(DCGM_FI_DEV_POWER_USAGE{{{dev}}})", "")),
            (16, 0, 4, 4),
            unit="watt",
        ),
        panel(
            "stat",
            "Memory used",
            targets(
                (
                    "sum(DCGM_FI_DEV_FB_USED{{{dev}}}) / (sum(DCGM_FI_DEV_FB_USED{{{dev}}}) + sum(DCGM_FI_DEV_FB_FREE{{{dev}}}))",
                    "",
                )
            ),
            (20, 0, 4, 4),
            unit="percentunit",
            minmax=RATIO,
        ),
        panel(
            "timeseries",
            "GPU utilization over time",
            targets(
                (f"avg({util})", "fleet mean"), (f"avg by (Hostname) ({util})", "{{Hostname}}")
            ),
            (0, 4, 16, 8),
            unit="percent",
            minmax=PCT,
        ),
        panel(
            "bargauge",
            "GPUs by utilization (5-minute mean)",
            _bucket_targets(),
            (16, 4, 8, 8),
            description="The seed's chart: how many GPUs sit in each 20% utilization bucket now.",
            options={"orientation": "horizontal", "displayMode": "basic", "showUnfilled": True},
        ),
        panel(
            "timeseries",
            "GPUs by utilization bucket over time",
            targets(
                ("sum by (bucket) (cluster:gpu_utilization_bucket:count{{{cl}}})", "{{bucket}}%")
            ),
            (0, 12, 12, 8),
            custom=STACKED,
            description="Recorded by cluster:gpu_utilization_bucket:count (whole cluster, ignores $node).",
        ),
        panel(
            "bargauge",
            "Idle GPU-hours per tenant (time range)",
            targets(
                (
                    "sort_desc(sum by (namespace) (avg_over_time(namespace:gpu_pod_idle_allocated:sum{{{ns}}}[$__range])) * $__range_s / 3600)",
                    "{{namespace}}",
                ),
                instant=True,
            ),
            (12, 12, 12, 8),
            unit="h",
            description="GPU slots held by pods below 5% utilization, integrated over the dashboard's time range.",
            options={"orientation": "horizontal", "displayMode": "gradient"},
        ),
        row("Memory, power, temperature", 20),
        panel(
            "timeseries",
            "Framebuffer memory used per node",
            targets(
                (
                    "sum by (Hostname) (DCGM_FI_DEV_FB_USED{{{dev}}}) / (sum by (Hostname) (DCGM_FI_DEV_FB_USED{{{dev}}}) + sum by (Hostname) (DCGM_FI_DEV_FB_FREE{{{dev}}}))",
                    "{{Hostname}}",
                ),
                (
                    "max(DCGM_FI_DEV_FB_USED{{{dev}}} / (DCGM_FI_DEV_FB_USED{{{dev}}} + DCGM_FI_DEV_FB_FREE{{{dev}}}))",
                    "fullest GPU",
                ),
            ),
            (0, 21, 8, 8),
            unit="percentunit",
            minmax=RATIO,
        ),
        panel(
            "timeseries",
            "Power draw per node",
            targets(
                ("sum by (Hostname) (DCGM_FI_DEV_POWER_USAGE{{{dev}}})", "{{Hostname}}"),
                (
                    "sum by (Hostname) (rate(DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION{{{dev}}}[$__rate_interval])) / 1000",
                    "{{Hostname}} (from energy counter)",
                ),
            ),
            (8, 21, 8, 8),
            unit="watt",
        ),
        panel(
            "timeseries",
            "Temperature (hottest GPU per node)",
            targets(
                ("max by (Hostname) (DCGM_FI_DEV_GPU_TEMP{{{dev}}})", "{{Hostname}} GPU"),
                ("max by (Hostname) (DCGM_FI_DEV_MEMORY_TEMP{{{dev}}})", "{{Hostname}} memory"),
            ),
            (16, 21, 8, 8),
            unit="celsius",
        ),
        row("Device activity", 29),
        panel(
            "timeseries",
            "Profiling ratios (fleet mean)",
            targets(
                ('avg(DCGM_FI_PROF_GR_ENGINE_ACTIVE{{{dev}, GPU_I_ID=""}})', "graphics engine"),
                ('avg(DCGM_FI_PROF_PIPE_TENSOR_ACTIVE{{{dev}, GPU_I_ID=""}})', "tensor pipe"),
                ('avg(DCGM_FI_PROF_DRAM_ACTIVE{{{dev}, GPU_I_ID=""}})', "DRAM"),
            ),
            (0, 30, 8, 8),
            unit="percentunit",
            minmax=RATIO,
        ),
        panel(
            "timeseries",
            "Memory copy, encoder, decoder utilization (fleet mean)",
            targets(
                ("avg(DCGM_FI_DEV_MEM_COPY_UTIL{{{dev}}})", "memory copy"),
                ("avg(DCGM_FI_DEV_ENC_UTIL{{{dev}}})", "encoder"),
                ("avg(DCGM_FI_DEV_DEC_UTIL{{{dev}}})", "decoder"),
            ),
            (8, 30, 8, 8),
            unit="percent",
            minmax=PCT,
        ),
        panel(
            "timeseries",
            "Clocks (fleet mean)",
            targets(
                ("avg(DCGM_FI_DEV_SM_CLOCK{{{dev}}})", "SM"),
                ("avg(DCGM_FI_DEV_MEM_CLOCK{{{dev}}})", "memory"),
            ),
            (16, 30, 8, 8),
            unit="rotmhz",
        ),
        panel(
            "table",
            "Device errors",
            targets(
                (
                    "sum by (Hostname, gpu, UUID) (increase(gpu_xid_errors_total{{{dev}}}[$__range])) or max by (Hostname, gpu, UUID) (0 * DCGM_FI_DEV_POWER_USAGE{{{dev}}})",
                    "XIDs",
                ),
                (
                    "sum by (Hostname, gpu, UUID) (increase(DCGM_FI_DEV_PCIE_REPLAY_COUNTER{{{dev}}}[$__range]))",
                    "PCIe replays",
                ),
                (
                    "sum by (Hostname, gpu, UUID) (DCGM_FI_DEV_FB_RESERVED{{{dev}}})",
                    "FB reserved MiB",
                ),
                instant=True,
            ),
            (0, 38, 12, 8),
            options={"showHeader": True},
        ),
        panel(
            "timeseries",
            "Exporter health",
            targets(
                ("min by (collector) (gpu_exporter_collector_success{{{cl}}})", "{{collector}} ok"),
                ("max(gpu_exporter_collect_duration_seconds{{{cl}}})", "slowest collect (s)"),
                (
                    "max(time() - gpu_exporter_last_collect_timestamp_seconds{{{cl}}})",
                    "oldest collect age (s)",
                ),
                (
                    "sum by (call) (rate(gpu_exporter_errors_total{{{cl}}}[$__rate_interval])) or on () vector(0)",
                    "errors/s {{call}}",
                ),
            ),
            (12, 38, 12, 8),
        ),
    ]
    return dashboard(
        "gpu-reclaim-fleet", "GPU fleet", "Fleet utilization, memory, power and health.", panels
    )
