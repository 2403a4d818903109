"""`simulate --report FILE.html`: the backtest as one self-contained HTML page.

One file, no script, no stylesheet or image fetched from anywhere: the plots are matplotlib's SVG
(`reclaimer.report.figures`) inlined, the style sits in a `<style>` element. Each section is a
heading, the plot, and beside it a short table of the numbers the plot shows, so the page reads
without JavaScript and without the plots. Sections: the runs' summary, waits per queue, GPUs
allocated and busy over time, preemptions over time, and, for a capacity sweep, wait p95 against
GPUs with the SLO line and each strategy's verdict. Pure apart from `write_report`.
"""

from __future__ import annotations

import html
import re
from collections.abc import Iterable, Sequence
from pathlib import Path

import numpy as np

from reclaimer.report import figures
from reclaimer.report.replay_data import Rule, RunRecord, SweepSummary

_NUMBER = re.compile(r"-?[\d,]+(\.\d+)?")
_NUM = ' class="num"'
_STYLE = """
body { font-family: sans-serif; margin: 2em auto; max-width: 1400px; color: #222; }
section { display: flex; flex-wrap: wrap; gap: 1.5em; align-items: flex-start; }
section > div.plot { flex: 2 1 640px; } section > div.plot svg { width: 100%; height: auto; }
table { border-collapse: collapse; font-size: 0.85em; flex: 1 1 320px; }
th, td { border: 1px solid #bbb; padding: 0.2em 0.5em; text-align: left; }
td.num { text-align: right; }
p.note { color: #555; font-size: 0.9em; max-width: 70em; }
"""


def _table(head: Sequence[str], rows: Iterable[Sequence[object]]) -> str:
    def cells(tag: str, values: Sequence[object]) -> str:
        return "".join(
            f"<{tag}{_NUM if _NUMBER.fullmatch(str(v)) else ''}>{html.escape(str(v))}</{tag}>"
            for v in values
        )

    body = "".join(f"<tr>{cells('td', row)}</tr>" for row in rows)
    return f"<table><thead><tr>{cells('th', head)}</tr></thead><tbody>{body}</tbody></table>"


def _section(title: str, svg: str, table: str, note: str = "") -> str:
    text = f'<p class="note">{html.escape(note)}</p>' if note else ""
    return (
        f"<h2>{html.escape(title)}</h2>{text}"
        f'<section><div class="plot">{svg}</div>{table}</section>'
    )


def _n(value: object, digits: int = 0) -> str:
    """A number with thousands separators; `-` for anything else (a missing key)."""
    return f"{value:,.{digits}f}" if isinstance(value, int | float) else "-"


def summary_table(records: Sequence[RunRecord]) -> str:
    head = (
        "strategy",
        "GPUs",
        "allocated GPU-h",
        "busy GPU-h",
        "effective util.",
        "guaranteed p95 s",
        "preemptions",
        "wrongful",
        "lost GPU-h",
    )
    keys = (
        "gpu_hours_allocated",
        "gpu_hours_busy",
        "effective_utilization",
        "guaranteed_wait_p95_s",
        "preemptions",
        "wrongful_preemptions",
        "lost_gpu_hours",
    )
    digits = (0, 0, 4, 0, 0, 0, 1)
    rows = [
        (r.strategy, r.gpus, *(_n(r.result.get(k), d) for k, d in zip(keys, digits, strict=True)))
        for r in records
    ]
    return _table(head, rows)


def wait_table(records: Sequence[RunRecord]) -> str:
    rows = []
    for queue in sorted({q for r in records for q in r.waits}):
        for r in records:
            waits = np.asarray(r.waits.get(queue, ()), dtype=float)
            if waits.size:
                p50, p95, p99 = np.percentile(waits, [50, 95, 99])
                rows.append(
                    (queue, r.strategy, waits.size, _n(p50), _n(p95), _n(p99), _n(waits.max()))
                )
    return _table(("queue", "strategy", "jobs", "p50 s", "p95 s", "p99 s", "max s"), rows)


def gpu_table(records: Sequence[RunRecord]) -> str:
    rows = [
        (
            r.strategy,
            r.gpus,
            _n(np.mean(r.allocated_gpus), 1),
            _n(max(r.allocated_gpus), 1),
            _n(np.mean(r.busy_gpus), 2),
        )
        for r in records
    ]
    return _table(("strategy", "capacity", "mean allocated", "peak bin", "mean busy"), rows)


def preemption_table(records: Sequence[RunRecord]) -> str:
    rows = [
        (r.strategy, sum(r.preemptions), sum(r.wrongful), max(r.preemptions, default=0))
        for r in records
    ]
    return _table(("strategy", "preemptions", "wrongful", "most in one bin"), rows)


def slowdown_table(records: Sequence[RunRecord]) -> str:
    rows = [
        (
            r.strategy,
            _n(r.result.get("guaranteed_slowdown_p95"), 3),
            _n(r.result.get("slowdown_p95"), 3),
            sum(r.oom_kills),
            sum(r.guaranteed_oom_kills),
        )
        for r in records
    ]
    head = ("strategy", "guaranteed slowdown p95", "all slowdown p95", "OOM kills", "guaranteed")
    return _table(head, rows)


def sweep_tables(sweep: SweepSummary) -> str:
    """The verdicts (under the pooled rule, the per-queue ones beside) and the p95s they read."""
    pooled = sweep.rule is Rule.POOLED
    verdict_rows = []
    for v in sweep.verdicts:
        beside = sweep.beside(v.strategy)
        extra = (
            ()
            if beside is None
            else (_or(beside.min_gpus, "none met"), _or(beside.gpus_saved_vs_none))
        )
        why = "; ".join(x for x in (v.reason, *v.caveats) if x)
        verdict_rows.append(
            (v.strategy, _or(v.min_gpus, "none met"), _or(v.gpus_saved_vs_none), *extra, why)
        )
    head = ["strategy", f"min GPUs ({sweep.rule.value})", "saved vs none"]
    head += ["min GPUs (per-queue)", "saved vs none (per-queue)"] if pooled else []
    gpus = sorted({c.gpus for v in sweep.verdicts for c in v.per_capacity})
    worst = {(v.strategy, c.gpus): c for v in sweep.verdicts for c in v.per_capacity}

    def cell(strategy: str, g: int) -> str:
        c = worst.get((strategy, g))
        if c is None:
            return "-"
        own = _n(c.worst_wait(Rule.PER_QUEUE))
        return f"{_n(c.worst_p95)} / {own}" if pooled else own

    p95_rows = [(v.strategy, *(cell(v.strategy, g) for g in gpus)) for v in sweep.verdicts]
    what = "pooled / worst queue p95 s at" if pooled else "worst queue's p95 s at"
    verdicts = _table((*head, "why / caveats"), verdict_rows)
    p95 = _table((f"{what} (worst seed)", *(f"{g} GPUs" for g in gpus)), p95_rows)
    return f"<div>{verdicts}<br>{p95}</div>"


def _or(value: int | None, missing: str = "-") -> object:
    return missing if value is None else value


def render(
    title: str,
    inputs: Sequence[tuple[str, str]],
    records: Sequence[RunRecord],
    sweep: SweepSummary | None = None,
) -> str:
    """The whole page; needs matplotlib (`figures.require_matplotlib`)."""
    parts = [f"<h1>{html.escape(title)}</h1>", _table(("input", "value"), inputs)]
    if sweep is not None:
        goal = (
            "guaranteed queues' pooled wait p95 (the per-queue rule's verdicts beside)"
            if sweep.rule is Rule.POOLED
            else "every guaranteed queue's own wait p95"
        )
        note = (
            f"SLO ({sweep.rule.value} rule): {goal} at most {sweep.slo_seconds:,.0f} s, their "
            "slowdown p95 within the limit and no guaranteed OOM kill, on every seed "
            f"({', '.join(map(str, sweep.seeds))}). Capacities: {sweep.range_note}."
        )
        parts.append(
            _section(
                "Capacity sweep: wait p95 against GPUs",
                figures.sweep_curve(sweep.verdicts, sweep.slo_seconds, sweep.rule),
                sweep_tables(sweep),
                note,
            )
        )
    if records:
        at = f"{records[0].gpus} GPUs, seed {records[0].seed}"
        parts += [
            f"<h2>Runs at {html.escape(at)}</h2>",
            summary_table(records),
            _section(
                "Wait time per queue", figures.wait_distribution(records), wait_table(records)
            ),
            _section(
                "GPUs allocated and busy over time",
                figures.gpus_over_time(records),
                gpu_table(records),
            ),
            _section(
                "Preemptions and wrongful preemptions over time",
                figures.preemptions_over_time(records),
                preemption_table(records),
            ),
            _section(
                "Slowdown of time-sliced jobs",
                figures.slowdown_distribution(records),
                slowdown_table(records),
            ),
            _section(
                "OOM kills on time-sliced GPUs over time",
                figures.oom_over_time(records),
                "",
            ),
        ]
    body = "\n".join(parts)
    return (
        f'<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        f"<title>{html.escape(title)}</title><style>{_STYLE}</style></head>"
        f"<body>\n{body}\n</body></html>\n"
    )


def write_report(path: Path, page: str) -> None:
    path.write_text(page, encoding="utf-8")
