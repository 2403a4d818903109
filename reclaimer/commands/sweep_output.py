"""What a capacity sweep prints and writes: its text lines, and the HTML report's page.

`text` gives each setting's verdicts and what changes across settings (`report.sensitivity`), or
one line per report run when there is no sweep; `write_report` renders the page of
`report.html_report` from the report's runs and the sweep's verdicts. Only `write_report` writes
a file.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from reclaimer.report import html_report, sensitivity
from reclaimer.report.replay_data import RunRecord, SweepSummary


def write_report(
    args: argparse.Namespace, records: list[RunRecord], summary: SweepSummary | None
) -> None:
    inputs = [
        ("pods", str(args.pods)),
        ("nodes", str(args.nodes)),
        ("utilization", str(args.utilization)),
        ("policy file", str(args.policy_file or "default policy")),
    ]
    title = "gpu-reclaimer simulate: backtest report"
    html_report.write_report(args.report, html_report.render(title, inputs, records, summary))


def text(
    sweeps: list[sensitivity.SettingSweep], records: list[RunRecord], report: Path | None
) -> str:
    lines = []
    if sweeps:
        lines += sensitivity.lines(sweeps)
    else:
        lines += [
            f"{r.strategy:<11} guaranteed p95 {_p95(r):,.0f} s at {r.gpus} GPUs" for r in records
        ]
    if report is not None:
        lines.append(f"report: {report}")
    return "\n".join(lines)


def _p95(record: RunRecord) -> float:
    value = record.result["guaranteed_wait_p95_s"]
    if not isinstance(value, int | float):
        raise TypeError(f"a replay's result has no guaranteed_wait_p95_s: {value!r}")
    return float(value)
