"""The status page's HTML, rendered from cycle reports: plan, skips, queues, jobs, escaping."""

from __future__ import annotations

import base64
import hashlib
import re
from dataclasses import replace
from html.parser import HTMLParser

from planworld import starved_world
from statusworld import report_of, skipped_report, usage, with_usage, world

from reclaimer.decisions import ActionResult, Outcome, Reason
from reclaimer.report.status.page import render_page, security_headers
from reclaimer.report.usage import JobUsage

VOID = {"meta", "br", "hr", "img", "input", "link", "rect", "line", "circle", "polyline"}


class _Structure(HTMLParser):
    """Tags opened and closed in order, and the visible text (outside <style> and <title>)."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.stack: list[str] = []
        self.tags: set[str] = set()
        self.text: list[str] = []
        self.problems: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.add(tag)
        if tag not in VOID:
            self.stack.append(tag)

    def handle_startendtag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.add(tag)

    def handle_endtag(self, tag: str) -> None:
        if tag in VOID:
            return
        if not self.stack or self.stack[-1] != tag:
            self.problems.append(f"</{tag}> closes {self.stack[-1:]}")
        else:
            self.stack.pop()

    def handle_data(self, data: str) -> None:
        if not self.stack or self.stack[-1] not in ("style", "title"):
            self.text.append(data)


def parse(page: str) -> _Structure:
    parsed = _Structure()
    parsed.feed(page)
    parsed.close()
    assert parsed.problems == [] and parsed.stack == [], (parsed.problems, parsed.stack)
    return parsed


def text_of(page: str) -> str:
    return " ".join(" ".join(parse(page).text).split())


def test_before_the_first_cycle_it_says_no_plan_exists_yet_and_why() -> None:
    text = text_of(render_page(None, dry_run=True))
    assert "No plan yet: the first cycle has not completed" in text
    assert "/readyz" in text and "Mode: dry-run" in text


def test_a_cycle_that_could_not_plan_says_why() -> None:
    report = skipped_report("Prometheus unreachable: connection refused")
    text = text_of(render_page(report, dry_run=False))
    assert "No plan this cycle: Prometheus unreachable: connection refused" in text
    assert "Mode: apply" in text and "skipped" in text


def test_the_plan_reads_with_its_reasons_and_evidence() -> None:
    report = report_of(world())
    text = text_of(render_page(report, dry_run=True))
    row = re.search(r"preempt be/idle IdleJobForStarvedQueue (.*?) dry_run", text)
    assert row is not None, text
    assert "frees 8 GPU slots (n1:8) for ls/x" in row.group(1)
    assert "Planned actions (1)" in text


def test_an_empty_plan_says_nothing_was_planned() -> None:
    report = report_of(starved_world().job("be/busy", "be", {"n2": 8}, busy=True))
    text = text_of(render_page(report, dry_run=True))
    assert "No action planned this cycle." in text
    assert "be/busy" in text  # still listed as a job, with its forecast


def test_skips_are_grouped_by_reason_with_why_and_capped() -> None:
    w = world()
    for i in range(30):
        w = w.job(f"be/busy-{i:02d}", "be", {f"m{i}": 1}, busy=True).node(f"m{i}", gpus=1)
    page = render_page(report_of(w), dry_run=True)
    text = text_of(page)
    assert f"{Reason.NOT_IDLE} — 31" in text
    assert "be/busy-00" in text and "be/busy-19" in text  # the first twenty, in plan order
    assert "be/busy-29 " not in text.split("Queues")[0]  # not in the skip list
    assert "… and 11 more (all in /plan)." in text
    assert re.search(r"<details>\s*<summary><strong>NotForecastIdle", page)  # collapsed


def test_queues_show_deserved_allocated_pending_and_standing() -> None:
    text = text_of(render_page(report_of(world()), dry_run=True))
    queues = text[text.index("Queues") :]
    assert "be 8 16 0 (0) 0 — yes over its share" in queues
    assert "ls 8 0 8 (1) 0 — no starved" in queues


def test_a_queue_no_object_names_is_marked() -> None:
    w = world().pend("ghost/y", "ghost", 2)
    text = text_of(render_page(report_of(w), dry_run=True))
    assert "ghost (no Queue object)" in text


def test_jobs_show_forecast_chart_and_decision() -> None:
    page = render_page(report_of(world()), dry_run=True)
    text = text_of(page)
    assert "be/idle be 8 idle for 15m: p_idle>0.99 (test; " in text
    assert "preempt (IdleJobForStarvedQueue)" in text
    assert "be/busy be 8 busy for 15m: p_idle=0.10 (test; " in text
    assert f"skipped: {Reason.NOT_IDLE}" in text
    assert page.count('<svg class="spark"') == 2
    assert 'aria-label="utilization, last 6h: mean 90%, max 90%"' in page


def test_a_job_without_forecast_says_why() -> None:
    unknown = JobUsage("be/new", "be", 2, (None,) * 4, 3600.0, "3 of 15 samples missing")
    page = render_page(with_usage(report_of(world()), unknown), dry_run=True)
    assert "be/new be 2 no forecast: 3 of 15 samples missing" in text_of(page)
    assert 'aria-label="utilization, last 1h: no samples"' in page


def test_a_large_fleet_lists_the_top_jobs_by_gpus_and_counts_the_rest() -> None:
    traces = [usage(f"ns/job-{i:03d}", "q", gpus=i % 8 + 1) for i in range(250)]
    report = with_usage(report_of(world()), *traces)
    text = text_of(render_page(report, dry_run=True, max_jobs=30))
    assert "Jobs (252)" in text  # the traces and the two forecast jobs
    assert "Showing the top 30 jobs by GPUs; 222 more jobs not listed here" in text
    listed = re.findall(r"ns/job-\d{3} q (\d)", text)
    assert len(listed) == 30 and set(listed) == {"8"}


def test_everything_from_the_cluster_is_escaped() -> None:
    evil = '<script>alert("x")</script>'
    w = (
        starved_world()
        .queue(evil, deserved_gpus=8.0, reclaimable=False)
        .job("be/<img src=x onerror=y>", "be", {"n1": 8}, idle=0.99)
        .job("be/busy", "be", {"n2": 8}, busy=True)
        .pend("ls/x", evil, 8)
    )
    traces = (usage("be/<img src=x onerror=y>", "be", 8), usage('a/"b" onload=x', evil, 1))
    report = with_usage(report_of(w), *traces)
    page = render_page(report, dry_run=True)
    parsed = parse(page)
    assert parsed.tags.isdisjoint({"script", "img"})
    assert "<script>" not in page and "<img" not in page and '"b" onload' not in page
    shown = " ".join(parsed.text)
    assert "be/<img src=x onerror=y> be 8 idle" in shown  # the job row, as text
    assert f"for ls/x (8 GPU slots, 1 pod) in {evil} at 0/8" in shown  # in the evidence
    assert f"{evil} 8 0 8 (1)" in shown  # the queue row


def test_a_lone_surrogate_in_a_name_never_fails_the_page() -> None:
    """A JSON `\\ud800` (a hand-edited dump, a proxy) decodes to a str UTF-8 cannot encode; the
    server encodes the page as UTF-8, so one such name made every request a 500."""
    odd = "be/job-\ud800x"
    w = starved_world().job(odd, "be", {"n1": 8}, idle=0.99).job("be/busy", "be", {"n2": 8})
    w = w.queue("q-\udfff", deserved_gpus=8.0, reclaimable=False).pend("ls/x", "q-\udfff", 8)
    report = with_usage(report_of(w), usage(odd, "be", 8))
    body = render_page(report, dry_run=True).encode("utf-8")  # raised UnicodeEncodeError
    shown = " ".join(parse(body.decode("utf-8")).text)
    assert "be/job-\ufffdx be 8 idle" in shown and "q-\ufffd" in shown


def test_the_security_headers_allow_exactly_the_page_s_stylesheet() -> None:
    page = render_page(report_of(world()), dry_run=True)
    (sheet,) = re.findall(r"<style>(.*?)</style>", page, flags=re.S)
    digest = base64.b64encode(hashlib.sha256(sheet.encode()).digest()).decode()
    headers = security_headers()
    csp = dict(part.split(" ", 1) for part in headers["Content-Security-Policy"].split("; "))
    assert csp["style-src"] == f"'sha256-{digest}'"
    assert csp["default-src"] == "'none'" and csp["script-src"] == "'none'"
    assert headers["X-Content-Type-Options"] == "nosniff"
    assert " style=" not in page  # inline style attributes would need 'unsafe-inline'


def test_each_action_shows_what_the_actuator_answered() -> None:
    report = report_of(world())
    (action,) = report.plan.actions if report.plan else ()
    refused = ActionResult(action, Outcome.SKIPPED, "1/1 this cycle", Reason.LIMIT_REACHED)
    text = text_of(render_page(replace(report, outcomes=(refused,)), dry_run=False))
    assert "skipped (LimitReached): 1/1 this cycle" in text
    unsent = text_of(render_page(report_of(world(), acted=False), dry_run=True))
    assert "not sent (withheld, not the leader, or no cluster to act on)" in unsent
