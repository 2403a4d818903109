"""A job's recent utilization as a small inline SVG line chart, drawn server-side.

The y axis is fixed at 0..100% so that charts compare across jobs; the idle threshold is a
dashed line. Points are bucket means, oldest left; a bucket without samples breaks the line (a
gap is not a zero), and a lone point between gaps is a dot. The chart names what it shows in
its `<title>` and `aria-label`, so it reads without the picture too.
"""

from __future__ import annotations

from collections.abc import Sequence

from reclaimer.report.status.markup import element, esc

WIDTH, HEIGHT = 120, 24


def sparkline(points: Sequence[float | None], *, threshold: float | None, span: str) -> str:
    """`points` are ratios 0..1 (None: no sample) over the last `span` (e.g. '6h')."""
    label = _label(points, span)
    body = f'<rect class="frame" x="0.5" y="0.5" width="{WIDTH - 1}" height="{HEIGHT - 1}"/>'
    if threshold is not None:
        y = _y(threshold)
        body += f'<line class="threshold" x1="1" y1="{y}" x2="{WIDTH - 1}" y2="{y}"/>'
    for run in _runs(points):
        coords = [(_x(i, len(points)), _y(v)) for i, v in run]
        if len(coords) == 1:
            (x, y), *_ = coords
            body += f'<circle class="dot" cx="{x}" cy="{y}" r="1.5"/>'
        else:
            shown = " ".join(f"{x},{y}" for x, y in coords)
            body += f'<polyline class="line" points="{shown}"/>'
    return element(
        "svg",
        element("title", esc(label)) + body,
        class_="spark",
        xmlns="http://www.w3.org/2000/svg",
        width=str(WIDTH),
        height=str(HEIGHT),
        viewBox=f"0 0 {WIDTH} {HEIGHT}",
        role="img",
        aria_label=label,
    )


def _label(points: Sequence[float | None], span: str) -> str:
    seen = [v for v in points if v is not None]
    if not seen:
        return f"utilization, last {span}: no samples"
    mean = sum(seen) / len(seen)
    return f"utilization, last {span}: mean {mean:.0%}, max {max(seen):.0%}"


def _runs(points: Sequence[float | None]) -> list[list[tuple[int, float]]]:
    """Stretches of consecutive points with values, with their positions."""
    runs: list[list[tuple[int, float]]] = [[]]
    for i, v in enumerate(points):
        if v is None:
            if runs[-1]:
                runs.append([])
        else:
            runs[-1].append((i, v))
    return [r for r in runs if r]


def _x(i: int, n: int) -> str:
    return f"{2 + i * (WIDTH - 4) / max(n - 1, 1):.1f}"


def _y(ratio: float) -> str:
    clipped = min(max(ratio, 0.0), 1.0)
    return f"{HEIGHT - 2 - clipped * (HEIGHT - 4):.1f}"
