"""Cycle reports for the status page tests: a planned world, its forecasts and usage traces."""

from __future__ import annotations

from dataclasses import replace
from types import MappingProxyType

from planworld import NOW, World, contested_world

from reclaimer.model import ActionResult, DataQuality, Outcome
from reclaimer.report.cycle import CycleReport, CycleResult
from reclaimer.report.usage import POINTS, WINDOW_SECONDS, JobUsage


def usage(job: str, queue: str, gpus: int, level: float | None = 0.0) -> JobUsage:
    return JobUsage(job, queue, gpus, (level,) * POINTS, WINDOW_SECONDS)


def world() -> World:
    """`be/idle` is preempted for `ls/x`; `be/busy` is skipped (not idle)."""
    return contested_world(idle=0.999)


def report_of(w: World, *, acted: bool = True) -> CycleReport:
    plan = w.plan()
    outcomes = tuple(ActionResult(a, Outcome.DRY_RUN) for a in plan.actions) if acted else ()
    busy = {k for k, f in w.forecasts.items() if not f.idle}
    traces = {j.key: usage(j.key, j.queue, j.gpus, 0.9 if j.key in busy else 0.0) for j in w.jobs}
    return CycleReport(
        result=CycleResult.SUCCESS,
        at=NOW,
        duration=0.5,
        message=f"{len(plan.actions)} action(s) planned",
        plan=plan,
        quality=DataQuality(metrics_at=NOW - 30),
        forecasts=MappingProxyType(dict(w.forecasts)),
        outcomes=outcomes,
        acted=acted,
        requests=5,
        usage=MappingProxyType(traces),
    )


def skipped_report(message: str) -> CycleReport:
    """A cycle that could not plan at all (Prometheus unreachable)."""
    return CycleReport(CycleResult.SKIPPED, NOW, 0.1, message)


def with_usage(report: CycleReport, *traces: JobUsage) -> CycleReport:
    return replace(report, usage=MappingProxyType({t.job: t for t in traces}))
