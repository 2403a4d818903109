"""The reclaimer's status page, `/`: the last cycle's plan, read by people, without JavaScript.

`render_page` turns the controller's last `CycleReport` into one HTML document: the cycle (when,
its result, dry-run or apply), what the data was worth, the fleet summary, what needs looking
at, the planned actions with their reasons and evidence, what was skipped and why, the Volcano
queues' shares, and each job's forecast with a chart of its recent utilization. Before the first
cycle, or when a cycle could not plan, it says so and why. Pure: the report in, a string out;
every value from the cluster is escaped (`markup.esc`), a name that cannot be encoded (a lone
surrogate) shows U+FFFD instead of failing the page, and `security_headers` are the headers
it must be served with (a CSP that allows no script and only this page's stylesheet).
"""

from __future__ import annotations

from reclaimer.decisions import Plan
from reclaimer.report.cycle import CycleReport, CycleResult
from reclaimer.report.fleet import render as render_fleet
from reclaimer.report.status.decisions import (
    actions_section,
    scheduled_section,
    skipped_section,
    warnings_section,
)
from reclaimer.report.status.jobs import MAX_JOBS, jobs_section
from reclaimer.report.status.markup import (
    element,
    encodable,
    esc,
    paragraph,
    section,
    timestamp,
)
from reclaimer.report.status.queues import queues_section
from reclaimer.report.status.style import STYLESHEET, style_source

TITLE = "gpu-reclaimer status"
NO_CYCLE_YET = (
    "No plan yet: the first cycle has not completed. The reclaimer plans once per interval, "
    "starting when it starts; a cycle first reads the cluster and the utilization history from "
    "Prometheus. /readyz answers 200 once a cycle has completed."
)


def render_page(report: CycleReport | None, *, dry_run: bool, max_jobs: int = MAX_JOBS) -> str:
    """The whole page for the last cycle's `report` (None: no cycle has completed yet)."""
    mode = "dry-run: nothing is changed in the cluster" if dry_run else "apply: actions are sent"
    head = element("h1", esc(TITLE)) + paragraph(f"Mode: {mode}.", class_="muted")
    if report is None:
        body = head + paragraph(NO_CYCLE_YET, class_="banner", id="no-plan")
    else:
        body = head + _cycle(report) + _plan(report, max_jobs)
    return _document(body)


def _document(body: str) -> str:
    body = encodable(body)  # belt and braces: esc already did it for every value it escaped
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>{esc(TITLE)}</title><style>{STYLESHEET}</style></head>"
        f"<body>{body}</body></html>\n"
    )


def _cycle(report: CycleReport) -> str:
    kind = {CycleResult.SUCCESS: "ok", CycleResult.SKIPPED: "warn"}.get(report.result, "bad")
    result = element("strong", esc(report.result), class_=kind)
    when = esc(
        f" at {timestamp(report.at)}, in {report.duration:.2f}s, "
        f"{report.requests} Prometheus request(s): {report.message}"
    )
    markup = element("p", f"Last cycle: {result}{when}", id="cycle")
    quality = report.quality
    if quality is not None and quality.metrics_at is not None:
        markup += paragraph(f"Newest utilization sample: {timestamp(quality.metrics_at)}.")
    problems = quality.problems if quality is not None else ()
    if problems:
        items = "".join(element("li", esc(p)) for p in problems)
        markup += element("p", "Data problems:", class_="warn") + element("ul", items)
    if report.summary is not None:
        markup += element("pre", esc(render_fleet(report.summary)))
    return section("Cycle", markup, "summary")


def _plan(report: CycleReport, max_jobs: int) -> str:
    plan: Plan | None = report.plan
    if plan is None:
        why = f"No plan this cycle: {report.message}"
        return paragraph(why, class_="banner", id="no-plan") + jobs_section(report, max_jobs)
    return (
        warnings_section(plan)
        + scheduled_section(plan)
        + actions_section(report, plan)
        + skipped_section(plan)
        + queues_section(plan)
        + jobs_section(report, max_jobs)
    )


def security_headers() -> dict[str, str]:
    """Headers the page is served with: no script, no frames, no outside loads, no caching."""
    policy = "; ".join(
        (
            "default-src 'none'",
            f"style-src {style_source()}",
            "img-src 'none'",
            "script-src 'none'",
            "base-uri 'none'",
            "form-action 'none'",
            "frame-ancestors 'none'",
        )
    )
    return {
        "Content-Security-Policy": policy,
        "X-Content-Type-Options": "nosniff",
        "X-Frame-Options": "DENY",
        "Referrer-Policy": "no-referrer",
        "Cache-Control": "no-store",
        "Cross-Origin-Opener-Policy": "same-origin",
        "Cross-Origin-Resource-Policy": "same-origin",
        "Permissions-Policy": "camera=(), microphone=(), geolocation=()",
    }
