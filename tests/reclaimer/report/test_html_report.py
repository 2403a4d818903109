"""`simulate --report`: the page a real `simulate` writes, as headless Chromium renders it."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import browser
import pytest
from simworld import BURSTY, HOUR, P, write_trace

from reclaimer.report import html_report
from reclaimer.report.replay_data import CapacityResult, PolicyVerdict, Rule, SweepSummary
from reclaimer.simulate.strategies import Strategy

# BE jobs that hold GPUs for a day while LS jobs arrive: every strategy has something to do.
TRACE = [P(f"be-{i}", "BE", 0.0, 24 * HOUR) for i in range(3)] + [
    P(f"ls-{i}", "LS", (i + 1) * HOUR, 2 * HOUR) for i in range(10)
]
HEADINGS = (
    "Capacity sweep: wait p95 against GPUs",
    "Wait time per queue",
    "GPUs allocated and busy over time",
    "Preemptions and wrongful preemptions over time",
    "Slowdown of time-sliced jobs",
    "OOM kills on time-sliced GPUs over time",
)
# What would make the page fetch something: a URL in a src/href/url(), an import, a script.
EXTERNAL = re.compile(
    r"""(?:src|href)\s*=\s*["']?\s*(?:https?:)?//|url\(\s*["']?\s*(?:https?:)?//|@import|<script"""
    r"""|<link\b""",
    re.IGNORECASE,
)


@pytest.fixture(scope="module")
def report(tmp_path_factory) -> Path:
    """The report of a real `python -m reclaimer simulate --capacity-sweep --report` run."""
    directory = tmp_path_factory.mktemp("report")
    paths = write_trace(directory, TRACE, [1, 1, 1, 1], BURSTY)
    page = directory / "report.html"
    argv = [
        sys.executable, "-m", "reclaimer", "simulate",
        "--pods", str(paths["pods"]), "--nodes", str(paths["nodes"]),
        "--utilization", str(paths["utilization"]), "--cold-start", str(paths["cold_start"]),
        "--capacity-scale", "0.5", "--capacity-sweep", "--capacities", "1-4", "--slo", "30m",
        "--jobs", "2", "--report", str(page), "--json",
    ]  # fmt: skip
    done = subprocess.run(argv, capture_output=True, text=True, timeout=300, check=False)
    assert done.returncode == 0, done.stderr
    return page


def test_the_page_has_every_section_and_every_strategy(report):
    dom = browser.dump_dom(report.as_uri())

    text = re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", dom))
    for heading in HEADINGS:
        assert heading in text
    for strategy in Strategy:  # timeslice-tuned needs --memory, which this run does not give
        assert (f" {strategy.value} " in text) is (strategy is not Strategy.TIMESLICE_TUNED)
    assert "Runs at 2 GPUs, seed 0" in text  # --capacity-scale 0.5 of four 1-GPU nodes
    assert dom.count("<svg") == 6  # the six plots, inline


def test_the_page_is_drawn_in_colour(report, tmp_path):
    png = browser.screenshot(report.as_uri(), tmp_path / "report.png")

    assert browser.ink(png) > 0.05
    assert browser.distinct_colours(png) > 50  # plots in four strategy colours, antialiased


def test_the_page_needs_nothing_from_the_network(report):
    page = report.read_text(encoding="utf-8")

    assert EXTERNAL.search(page) is None
    assert "<!DOCTYPE svg" not in page and "<?xml" not in page  # SVG inlined, not a document


def _verdict(least: int | None) -> PolicyVerdict:
    """`none` at 30 GPUs: pooled p95 0 s, queue ST's own 20,520 s."""
    at_30 = CapacityResult(30, 0.005, {0: 0.0}, True, worst_queue_by_seed={0: ("st", 20_520.0)})
    return PolicyVerdict("none", least, None if least is None else 0, None, (), (at_30,))


POOLED_HEADS = ["min GPUs (pooled)", "saved vs none", "min GPUs (per-queue)",
                "saved vs none (per-queue)"]  # fmt: skip


@pytest.mark.parametrize(
    ("rule", "heads", "row", "cell"),
    [
        (Rule.PER_QUEUE, ["min GPUs (per-queue)", "saved vs none"], ["none met", "-"], "20,520"),
        (Rule.POOLED, POOLED_HEADS, ["30", "0", "none met", "-"], "0 / 20,520"),
    ],
    ids=["per-queue", "pooled-with-per-queue-beside"],
)
def test_the_sweep_tables_name_the_rule_and_put_per_queue_beside_pooled(rule, heads, row, cell):
    if rule is Rule.POOLED:
        summary = SweepSummary(600.0, (0,), "30", (_verdict(30),), rule, (_verdict(None),))
    else:
        summary = SweepSummary(600.0, (0,), "30", (_verdict(None),), rule)

    verdicts, p95 = html_report.sweep_tables(summary).split("<br>")

    assert re.findall(r"<th>([^<]*)</th>", verdicts) == ["strategy", *heads, "why / caveats"]
    assert re.findall(r"<td[^>]*>([^<]*)</td>", verdicts)[1:-1] == row
    assert f">{cell}</td>" in p95  # the p95 the rule reads (pooled: beside the queue's own)
