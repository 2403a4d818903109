"""The jobs on the status page: each GPU job's forecast beside a chart of its recent usage.

One row per job that holds GPUs (or has a forecast), the largest first (GPUs, then key), at
most `limit` of them: on a large fleet the page lists the top jobs by GPUs and says how many it
left out (`/plan` has every forecast). The row also says what this cycle decided about the job:
the planned action, or the reason it was skipped.
"""

from __future__ import annotations

from collections.abc import Mapping

from reclaimer.decisions import Plan
from reclaimer.forecast import wording
from reclaimer.model import Forecast
from reclaimer.report.cycle import CycleReport
from reclaimer.report.status.markup import count, element, esc, paragraph, section, table
from reclaimer.report.status.sparkline import sparkline
from reclaimer.report.usage import JobUsage
from reclaimer.units import format_duration

MAX_JOBS = 200
HEADERS = ("Job", "Queue", "GPUs", "Forecast", "Recent utilization", "This cycle")


def jobs_section(report: CycleReport, limit: int = MAX_JOBS) -> str:
    keys = {*report.usage, *report.forecasts}
    if not keys:
        return section("Jobs", paragraph("No job holds GPUs."), "jobs")
    ranked = sorted(keys, key=lambda k: (-_gpus(report.usage.get(k)), k))
    decided = _decisions(report.plan)
    rows = [
        _row(k, report.usage.get(k), report.forecasts.get(k), decided.get(k, ""))
        for k in ranked[:limit]
    ]
    markup = table(HEADERS, rows, class_="jobs")
    title = f"Jobs ({len(keys):,})"
    if len(keys) > limit:
        note = (
            f"Showing the top {limit:,} jobs by GPUs; {count(len(keys) - limit, 'more job')} "
            "not listed here (every forecast is in /plan)."
        )
        markup = paragraph(note, class_="banner") + markup
    return section(title, markup, "jobs")


def _gpus(usage: JobUsage | None) -> int:
    return usage.gpus if usage else 0


def _decisions(plan: Plan | None) -> Mapping[str, str]:
    """Job key -> what this cycle decided about it (an action wins over a skip)."""
    if plan is None:
        return {}
    out = {s.target: f"skipped: {s.reason}" for s in plan.skipped}
    out.update({a.target: f"{a.kind} ({a.reason})" for a in plan.actions})
    return out


def _row(
    key: str, usage: JobUsage | None, forecast: Forecast | None, decided: str
) -> tuple[str, ...]:
    return (
        esc(key),
        esc(usage.queue if usage else ""),
        esc(usage.gpus if usage else ""),
        _forecast(forecast, usage),
        _chart(usage, forecast),
        esc(decided),
    )


def _forecast(f: Forecast | None, usage: JobUsage | None) -> str:
    if f is None:
        why = usage.unknown if usage and usage.unknown else "no usable utilization series"
        return element("span", esc(f"no forecast: {why}"), class_="muted")
    horizon = format_duration(f.horizon_seconds)
    verdict = "idle" if f.idle else "busy"
    words = (
        f"{verdict} for {horizon}: {wording.odds_text(f)}, "
        f"idle window ~{format_duration(round(f.predicted_idle_seconds))}"
    )
    return element("span", esc(words), class_="ok" if f.idle else "muted")


def _chart(usage: JobUsage | None, forecast: Forecast | None) -> str:
    if usage is None:
        return element("span", "not holding GPUs", class_="muted")
    threshold = forecast.threshold if forecast else None
    span = format_duration(usage.window_seconds)
    latest = next((v for v in reversed(usage.points) if v is not None), None)
    now = "" if latest is None else f" {latest:.0%}"
    return sparkline(usage.points, threshold=threshold, span=span) + esc(now)
