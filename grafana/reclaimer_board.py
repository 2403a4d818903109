# ruff: noqa: E501  (PromQL reads best on one line)
"""The gpu-reclaimer dashboard: dry-run and leader state, cycles, planned vs applied vs failed
actions by reason, reclaimed GPU-hours, forecast outcomes and accuracy (reclaimer self-metrics)."""

from __future__ import annotations

from panels import RATIO, STACKED, Json, dashboard, panel, targets

DRY_RUN_MAP = [
    {
        "type": "value",
        "options": {
            "0": {"text": "enforcing", "color": "green"},
            "1": {"text": "dry-run", "color": "blue"},
        },
    }
]


def reclaimer() -> Json:
    inc = "sum by (kind, reason) (increase({m}{{{{{{cl}}}}}}[$__range]))"
    panels = [
        panel(
            "stat",
            "Mode",
            targets(("max(gpu_reclaimer_dry_run{{{cl}}})", "")),
            (0, 0, 4, 4),
            mappings=DRY_RUN_MAP,
        ),
        panel(
            "stat",
            "Leaders",
            targets(("sum(gpu_reclaimer_is_leader{{{cl}}})", "")),
            (4, 0, 4, 4),
            description="Replicas holding the lease: should be exactly 1.",
        ),
        panel(
            "stat",
            "Since last successful cycle",
            targets(("time() - max(gpu_reclaimer_last_success_timestamp_seconds{{{cl}}})", "")),
            (8, 0, 4, 4),
            unit="s",
        ),
        panel(
            "stat",
            "Reclaimed GPU-hours (time range)",
            targets(
                (
                    "sum(increase(gpu_reclaimer_reclaimed_gpu_seconds_total{{{cl}}}[$__range])) / 3600",
                    "",
                )
            ),
            (12, 0, 4, 4),
            unit="h",
            description="GPU time freed by preemptions; would-be in dry-run.",
        ),
        panel(
            "stat",
            "Forecast accuracy (time range)",
            targets(
                (
                    'sum(increase(gpu_reclaimer_forecast_checks_total{{{cl}, result="correct"}}[$__range])) / sum(increase(gpu_reclaimer_forecast_checks_total{{{cl}}}[$__range]))',
                    "",
                )
            ),
            (16, 0, 4, 4),
            unit="percentunit",
            minmax=RATIO,
            description="Share of idle forecasts that stayed idle over their horizon.",
        ),
        panel(
            "stat",
            "Cycle duration",
            targets(("max(gpu_reclaimer_cycle_duration_seconds{{{cl}}})", "")),
            (20, 0, 4, 4),
            unit="s",
        ),
        panel(
            "table",
            "Planned vs applied vs failed actions by reason (time range)",
            targets(
                (inc.format(m="gpu_reclaimer_actions_planned_total"), "planned"),
                (inc.format(m="gpu_reclaimer_actions_applied_total"), "applied"),
                (inc.format(m="gpu_reclaimer_actions_failed_total"), "failed"),
                instant=True,
            ),
            (0, 4, 12, 8),
            options={"showHeader": True},
        ),
        panel(
            "timeseries",
            "Planned vs applied actions per hour",
            targets(
                (
                    "sum by (reason) (increase(gpu_reclaimer_actions_planned_total{{{cl}}}[1h]))",
                    "planned {{reason}}",
                ),
                (
                    "sum by (reason) (increase(gpu_reclaimer_actions_applied_total{{{cl}}}[1h]))",
                    "applied {{reason}}",
                ),
                (
                    "sum by (reason) (increase(gpu_reclaimer_actions_failed_total{{{cl}}}[1h]))",
                    "failed {{reason}}",
                ),
            ),
            (12, 4, 12, 8),
        ),
        panel(
            "timeseries",
            "Cycles by result",
            targets(
                (
                    "sum by (result) (increase(gpu_reclaimer_cycles_total{{{cl}}}[$__rate_interval]))",
                    "{{result}}",
                )
            ),
            (0, 12, 8, 8),
            custom=STACKED,
        ),
        panel(
            "timeseries",
            "Reclaimed GPU-hours per hour",
            targets(
                (
                    "sum(increase(gpu_reclaimer_reclaimed_gpu_seconds_total{{{cl}}}[1h])) / 3600",
                    "GPU-hours",
                ),
            ),
            (8, 12, 8, 8),
            unit="h",
        ),
        panel(
            "timeseries",
            "Forecasts by outcome and checks by result",
            targets(
                ("sum by (outcome) (gpu_reclaimer_forecasts{{{cl}}})", "{{outcome}}"),
                (
                    "sum by (result) (increase(gpu_reclaimer_forecast_checks_total{{{cl}}}[1h]))",
                    "checked {{result}} /h",
                ),
            ),
            (16, 12, 8, 8),
        ),
    ]
    return dashboard(
        "gpu-reclaim-reclaimer",
        "gpu-reclaimer",
        "What the reclaimer plans, applies and frees.",
        panels,
    )
