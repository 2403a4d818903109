"""The backtest report's plots, drawn by matplotlib and returned as SVG text to inline.

matplotlib is an optional dependency (the `report` extra) and is imported only inside these
functions, never at module import, so nothing else pays for it; `require_matplotlib` tells the
command up front when it is missing. Figures are built on `matplotlib.figure.Figure` directly (no
pyplot, no global state, no display), text drawn as paths so the SVG needs no font, and the
SVG's XML prolog, DOCTYPE and metadata are dropped so that it can sit inside an HTML page with no
reference to anything outside it. Each strategy keeps one colour in every plot.
"""

from __future__ import annotations

import io
import math
import re
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

from reclaimer.report.replay_data import PolicyVerdict, Rule, RunRecord

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

COLOURS = {
    "none": "#555555",
    "allocation": "#1f77b4",
    "threshold": "#d62728",
    "forecast": "#2ca02c",
}
EXTRA_COLOURS = ("#9467bd", "#8c564b", "#e377c2", "#17becf")
DAY = 86400.0
_PROLOG = re.compile(r"^.*?(?=<svg\b)", re.DOTALL)
_METADATA = re.compile(r"<metadata>.*?</metadata>\s*", re.DOTALL)


class ReportUnavailable(RuntimeError):
    """matplotlib is not installed; the message says how to get it."""


def require_matplotlib() -> None:
    try:
        import matplotlib  # noqa: F401, PLC0415 (optional: only the report needs it)
    except ImportError as exc:
        raise ReportUnavailable(
            "--report needs matplotlib, which is in the `report` extra: "
            "pip install 'gpu-reclaim[report]'"
        ) from exc


def colour(strategy: str, order: Sequence[str] = ()) -> str:
    if strategy in COLOURS:
        return COLOURS[strategy]
    index = list(order).index(strategy) if strategy in order else 0
    return EXTRA_COLOURS[index % len(EXTRA_COLOURS)]


def _figure(rows: int, cols: int = 1, height: float = 2.4) -> tuple[Figure, list[Axes]]:
    from matplotlib.figure import Figure  # noqa: PLC0415 (optional dependency)

    fig = Figure(figsize=(9.0, 0.6 + height * rows), layout="constrained")
    axes = fig.subplots(rows, cols, squeeze=False)
    return fig, [ax for row in axes for ax in row]


def _svg(fig: Figure) -> str:
    buffer = io.StringIO()
    fig.savefig(buffer, format="svg", metadata={"Date": None})
    text = _METADATA.sub("", _PROLOG.sub("", buffer.getvalue(), count=1))
    return text.strip()


def wait_distribution(records: Sequence[RunRecord]) -> str:
    """Per queue, the share of jobs that waited longer than x, one line per strategy."""
    by_queue = [r.waits for r in records]
    fig, axes = _survival(records, by_queue, start=0.0, height=2.8)
    for ax in axes:
        ax.set_xscale("symlog", linthresh=60.0)
        ax.set_xlim(left=0.0)
        ax.set_xlabel("wait (s, log above 60 s)")
        ax.set_ylabel("share of jobs waiting longer")
    return _svg(fig)


def _survival(
    records: Sequence[RunRecord],
    by_queue: Sequence[Mapping[str, Sequence[float]]],
    *,
    start: float,
    height: float,
) -> tuple[Figure, list[Axes]]:
    """One panel per queue: per strategy, the share of jobs whose value (a wait, a slowdown)
    passes x, as a step curve from (`start`, 1); the panels in use, the others hidden."""
    queues = sorted({q for values in by_queue for q in values})
    cols = 2 if len(queues) > 1 else 1
    fig, axes = _figure(max(1, math.ceil(len(queues) / cols)), cols, height=height)
    names = [r.strategy for r in records]
    for ax, queue in zip(axes, queues, strict=False):
        for record, values in zip(records, by_queue, strict=True):
            ordered = sorted(values.get(queue, ()))
            if not ordered:
                continue
            share = [1.0 - (i + 1) / len(ordered) for i in range(len(ordered))]
            ax.step(
                [start, *ordered],
                [1.0, *share],
                where="post",
                label=record.strategy,
                color=colour(record.strategy, names),
                linewidth=1.6,
            )
        ax.set_ylim(0.0, 1.02)
        ax.set_title(f"queue {queue}", fontsize=10)
        ax.grid(alpha=0.3)
    for ax in axes[len(queues) :]:
        ax.set_visible(False)
    axes[0].legend(fontsize=8)
    return fig, axes[: len(queues)]


def _days(record: RunRecord) -> list[float]:
    return [(i + 0.5) * record.bin_seconds / DAY for i in range(len(record.allocated_gpus))]


def gpus_over_time(records: Sequence[RunRecord]) -> str:
    """Per strategy: GPUs allocated and busy (bin means) against the capacity."""
    fig, axes = _figure(len(records), height=1.9)
    names = [r.strategy for r in records]
    for ax, record in zip(axes, records, strict=True):
        days, tint = _days(record), colour(record.strategy, names)
        ax.plot(days, record.allocated_gpus, color=tint, linewidth=1.2, label="allocated")
        ax.fill_between(days, record.busy_gpus, color=tint, alpha=0.45, label="busy")
        ax.axhline(record.gpus, color="#000000", linestyle="--", linewidth=0.8, label="capacity")
        ax.set_ylim(0.0, record.gpus * 1.08)
        ax.set_ylabel("GPUs")
        ax.set_title(record.strategy, fontsize=10, loc="left")
        ax.grid(alpha=0.3)
    axes[0].legend(fontsize=8, loc="upper right", ncols=3)
    axes[-1].set_xlabel("days since the trace's first arrival")
    return _svg(fig)


def preemptions_over_time(records: Sequence[RunRecord]) -> str:
    """Per strategy: preemptions per bin, and the wrongful ones among them."""
    fig, axes = _figure(len(records), height=1.6)
    names = [r.strategy for r in records]
    for ax, record in zip(axes, records, strict=True):
        days, width = _days(record), record.bin_seconds / DAY
        tint = colour(record.strategy, names)
        ax.bar(days, record.preemptions, width=width, color=tint, alpha=0.5, label="preemptions")
        ax.bar(days, record.wrongful, width=width, color=tint, label="wrongful")
        if not any(record.preemptions):
            ax.text(0.5, 0.5, "no preemptions", transform=ax.transAxes, ha="center")
        ax.set_ylim(bottom=0.0)
        ax.set_ylabel("per bin")
        ax.set_title(record.strategy, fontsize=10, loc="left")
        ax.grid(alpha=0.3)
    axes[0].legend(fontsize=8, loc="upper right", ncols=2)
    axes[-1].set_xlabel(f"days since the trace's first arrival (bins of {width * 24:.3g} h)")
    return _svg(fig)


def slowdown_distribution(records: Sequence[RunRecord]) -> str:
    """Per queue, the share of jobs slowed more than x (run time over dedicated run time)."""
    by_queue = [r.slowdowns for r in records]
    fig, axes = _survival(records, by_queue, start=1.0, height=2.6)
    for ax in axes:
        ax.set_xscale("log")
        ax.set_xlabel("slowdown (run time / dedicated run time, log)")
        ax.set_ylabel("share of jobs slower")
    return _svg(fig)


def oom_over_time(records: Sequence[RunRecord]) -> str:
    """Per strategy: OOM kills on time-sliced GPUs per bin, and the guaranteed ones among them."""
    fig, axes = _figure(len(records), height=1.6)
    names = [r.strategy for r in records]
    for ax, record in zip(axes, records, strict=True):
        days, width = _days(record), record.bin_seconds / DAY
        tint = colour(record.strategy, names)
        kills = record.oom_kills or (0,) * len(days)
        mine = record.guaranteed_oom_kills or (0,) * len(days)
        ax.bar(days, kills, width=width, color=tint, alpha=0.5, label="OOM kills")
        ax.bar(days, mine, width=width, color=tint, label="of guaranteed jobs")
        if not any(kills):
            ax.text(0.5, 0.5, "no OOM kills", transform=ax.transAxes, ha="center")
        ax.set_ylim(bottom=0.0)
        ax.set_ylabel("per bin")
        ax.set_title(record.strategy, fontsize=10, loc="left")
        ax.grid(alpha=0.3)
    axes[0].legend(fontsize=8, loc="upper right", ncols=2)
    axes[-1].set_xlabel("days since the trace's first arrival")
    return _svg(fig)


def sweep_curve(verdicts: Sequence[PolicyVerdict], slo_seconds: float, rule: Rule) -> str:
    """The wait p95 `rule` reads (the worst guaranteed queue's own, or the pooled one) against
    GPUs, per strategy, with the SLO line."""
    fig, (ax,) = _figure(1, height=3.4)
    names = [v.strategy for v in verdicts]
    for verdict in verdicts:
        gpus = [c.gpus for c in verdict.per_capacity]
        tint = colour(verdict.strategy, names)
        ax.plot(
            gpus,
            [c.worst_wait(rule) for c in verdict.per_capacity],
            marker="o",
            color=tint,
            label=f"{verdict.strategy} (worst seed)",
        )
        for c in verdict.per_capacity:
            seeds = list(c.waits_by_seed(rule).values())
            ax.scatter([c.gpus] * len(seeds), seeds, color=tint, s=8, alpha=0.5)
        if verdict.min_gpus is not None:
            ax.axvline(verdict.min_gpus, color=tint, linestyle=":", linewidth=1.0)
    ax.axhline(slo_seconds, color="#000000", linestyle="--", linewidth=1.2, label="SLO")
    ax.set_yscale("symlog", linthresh=60.0)
    ax.set_ylim(bottom=0.0)
    ax.set_xlabel("GPUs")
    what = "pooled guaranteed" if rule is Rule.POOLED else "worst guaranteed queue's"
    ax.set_ylabel(f"{what} wait p95 (s, log above 60 s)")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    return _svg(fig)
