"""The status page lists the jobs warned of a stop, with their stop time and the time left."""

from __future__ import annotations

import re

from planworld import NOW, starved_world
from statusworld import report_of

from reclaimer.decisions import Reason
from reclaimer.model import StopWarning
from reclaimer.plan.warning import at
from reclaimer.report.status.page import render_page


def text_of(page: str) -> str:
    """The page's visible words, tags dropped, whitespace collapsed."""
    return " ".join(re.sub(r"<style>.*?</style>|<[^>]+>", " ", page, flags=re.S).split())


def test_a_warned_job_is_listed_with_its_stop_time_and_time_left() -> None:
    warned = StopWarning(NOW - 60, NOW + 240, "ls/x", str(Reason.IDLE_FOR_STARVED_QUEUE))
    w = (
        starved_world()
        .job("be/idle", "be", {"n1": 8}, idle=0.99, warning=warned)
        .job("be/busy", "be", {"n2": 8}, busy=True)
        .pend("ls/x", "ls", 8)
    )
    text = text_of(render_page(report_of(w), dry_run=False))
    section = text.split("Stops scheduled", 1)[1].split("Planned actions", 1)[0]
    assert f"be/idle warned at {at(NOW - 60)} for ls/x; stops at {at(NOW + 240)} (in 4m)" in section


def test_no_section_without_a_warned_job() -> None:
    w = starved_world().job("be/idle", "be", {"n1": 8}, idle=0.99).pend("ls/x", "ls", 8)
    assert "Stops scheduled" not in text_of(render_page(report_of(w), dry_run=False))
