"""The reclaimer's own metrics, declared from `gpu_contract.RECLAIMER_METRICS` on its own registry.

Names come from the contract only: `_declare()` looks each one up there and fails at import if the
contract lacks it. prometheus_client appends `_total` to counter samples, so a counter is declared
under its contract name minus `_total`; the exposed names then equal the contract names exactly
(checked by the tests). The `_created` companions are turned off: they are not in the contract
and would look like extra families to anyone reading the exposition. Values are set by the
controller after each cycle; scrapes do no work.
"""

from __future__ import annotations

from prometheus_client import (
    CollectorRegistry,
    Counter,
    Gauge,
    disable_created_metrics,
    generate_latest,
)

import gpu_contract as gc
from reclaimer.decisions import Action

_BY_NAME = {m.name: m for m in gc.RECLAIMER_METRICS}


def _declare(registry: CollectorRegistry, name: str) -> Counter | Gauge:
    spec = _BY_NAME[name]  # KeyError here means the contract and this module disagree
    if spec.kind is gc.Kind.COUNTER:
        return Counter(name.removesuffix("_total"), spec.help, spec.labels, registry=registry)
    return Gauge(name, spec.help, spec.labels, registry=registry)


class ReclaimerMetrics:
    """One attribute per contract family; `exposition()` renders the registry."""

    def __init__(self) -> None:
        disable_created_metrics()  # type: ignore[no-untyped-call]  # process-wide in prometheus_client; see the docstring
        self.registry = CollectorRegistry(auto_describe=True)
        r = self.registry
        self.cycle_duration = _gauge(r, "gpu_reclaimer_cycle_duration_seconds")
        self.last_success = _gauge(r, "gpu_reclaimer_last_success_timestamp_seconds")
        self.cycles = _counter(r, "gpu_reclaimer_cycles_total")
        self.planned = _counter(r, "gpu_reclaimer_actions_planned_total")
        self.applied = _counter(r, "gpu_reclaimer_actions_applied_total")
        self.failed = _counter(r, "gpu_reclaimer_actions_failed_total")
        self.dry_run = _gauge(r, "gpu_reclaimer_dry_run")
        self.is_leader = _gauge(r, "gpu_reclaimer_is_leader")
        self.forecasts = _gauge(r, "gpu_reclaimer_forecasts")
        self.forecast_checks = _counter(r, "gpu_reclaimer_forecast_checks_total")
        self.reclaimed_gpu_seconds = _counter(r, "gpu_reclaimer_reclaimed_gpu_seconds_total")
        self.gpus_releasing = _gauge(r, "gpu_reclaimer_gpus_releasing")
        self.releases_overdue = _gauge(r, "gpu_reclaimer_releases_overdue")
        self.usage_unknown = _gauge(r, "gpu_reclaimer_jobs_usage_unknown")
        self.policy_rejected = _gauge(r, "gpu_reclaimer_policy_rejected")
        self.notifications = _counter(r, "gpu_reclaimer_notifications_total")
        for result in ("success", "skipped", "error"):
            self.cycles.labels(result=result)
        for result in ("correct", "wrong"):
            self.forecast_checks.labels(result=result)
        for result in ("sent", "failed"):
            self.notifications.labels(result=result)

    def count_action(self, counter: Counter, action: Action) -> None:
        counter.labels(kind=str(action.kind), reason=str(action.reason)).inc()

    def set_forecasts(self, idle: int, busy: int, unknown: int) -> None:
        for outcome, n in (("idle", idle), ("busy", busy), ("unknown", unknown)):
            self.forecasts.labels(outcome=outcome).set(n)

    def exposition(self) -> bytes:
        return generate_latest(self.registry)


def _counter(registry: CollectorRegistry, name: str) -> Counter:
    metric = _declare(registry, name)
    assert isinstance(metric, Counter), name
    return metric


def _gauge(registry: CollectorRegistry, name: str) -> Gauge:
    metric = _declare(registry, name)
    assert isinstance(metric, Gauge), name
    return metric
