"""The sparkline: a fixed 0..100% scale, gaps that break the line, a dot for a lone point."""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET

import pytest

from reclaimer.report.status.sparkline import HEIGHT, WIDTH, sparkline

SVG = "{http://www.w3.org/2000/svg}"


def shapes(svg: str) -> tuple[list[list[tuple[float, float]]], int, bool]:
    """(the polylines' points, the number of dots, whether a threshold line is drawn)."""
    root = ET.fromstring(svg)  # well-formed XML, as inline SVG must be
    lines = [
        [tuple(map(float, xy.split(","))) for xy in p.get("points", "").split()]
        for p in root.iter(f"{SVG}polyline")
    ]
    dots = len(list(root.iter(f"{SVG}circle")))
    return lines, dots, any(True for _ in root.iter(f"{SVG}line"))  # type: ignore[misc]


@pytest.mark.parametrize(
    ("points", "runs", "dots"),
    [
        pytest.param([0.1, 0.2, 0.3], [3], 0, id="one-run"),
        pytest.param([0.1, None, 0.3, 0.4], [2], 1, id="gap-leaves-a-lone-dot"),
        pytest.param([0.1, 0.2, None, None, 0.3, 0.4], [2, 2], 0, id="gap-splits"),
        pytest.param([None, None], [], 0, id="no-samples"),
        pytest.param([], [], 0, id="empty"),
    ],
)
def test_gaps_break_the_line(points: list[float | None], runs: list[int], dots: int) -> None:
    lines, drawn_dots, _ = shapes(sparkline(points, threshold=None, span="6h"))
    assert [len(line) for line in lines] == runs
    assert drawn_dots == dots


def test_the_scale_is_fixed_and_values_are_clipped() -> None:
    (line,), _, _ = shapes(sparkline([0.0, 1.0, 1.7, -0.2], threshold=None, span="6h"))
    ys = [y for _, y in line]
    assert ys[0] == ys[3] == HEIGHT - 2  # 0% and below at the bottom
    assert ys[1] == ys[2] == 2  # 100% and above at the top
    xs = [x for x, _ in line]
    assert xs[0] == 2 and xs[-1] == WIDTH - 2 and xs == sorted(xs)


def test_threshold_line_and_label() -> None:
    svg = sparkline([0.02, 0.5, None], threshold=0.05, span="6h")
    assert shapes(svg)[2]
    label = "utilization, last 6h: mean 26%, max 50%"
    assert f'aria-label="{label}"' in svg and f"<title>{label}</title>" in svg
    assert not shapes(sparkline([0.1], threshold=None, span="6h"))[2]
    assert re.search(r"no samples", sparkline([None], threshold=None, span="1h"))
