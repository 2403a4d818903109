"""Which process-utilization rows to believe and where the next read starts from (pure)."""

from __future__ import annotations

import pytest

from exporter.nvml.process_activity import FUTURE_SLACK_US, Average, Row, accept, next_last_seen

S = 1_000_000  # µs per second
NOW = 100 * S
LAST = 80 * S

ROWS_CASES = [
    pytest.param([Row(1, 99 * S, 40, 10)], {1}, {1: Average(0.4, 0.1)}, set(), 99 * S, id="one"),
    pytest.param([Row(9, 99 * S, 40, 10)], {1}, {}, set(), None, id="not-running"),
    pytest.param([Row(0, 0, 0, 0)], {1}, {}, set(), None, id="padding"),
    pytest.param([Row(1, 99 * S, 101, 0)], {1}, {}, {1}, None, id="over-100"),
    pytest.param([Row(1, 99 * S, 0, 3000)], {1}, {}, {1}, None, id="mem-over-100"),
    pytest.param([Row(1, NOW + FUTURE_SLACK_US + 1, 10, 0)], {1}, {}, {1}, None, id="future"),
    pytest.param(
        [Row(1, NOW + 10, 10, 0)], {1}, {1: Average(0.1, 0.0)}, set(), NOW + 10, id="slack"
    ),
    pytest.param([Row(1, LAST, 10, 0)], {1}, {}, set(), None, id="stale"),
    pytest.param(
        [Row(1, 90 * S, 10, 0), Row(1, 95 * S, 20, 0), Row(1, 99 * S, 999, 0)],
        {1},
        {1: Average(0.2, 0.0)},
        set(),
        95 * S,
        id="newest-good-row-wins",
    ),
]


@pytest.mark.parametrize(("rows", "running", "by_pid", "unknown", "newest"), ROWS_CASES)
def test_accept(
    rows: list[Row],
    running: set[int],
    by_pid: dict[int, Average],
    unknown: set[int],
    newest: int | None,
) -> None:
    got = accept(rows, running, LAST, NOW)
    assert dict(got.by_pid) == by_pid
    assert got.unknown == unknown and got.newest_us == newest


@pytest.mark.parametrize(
    ("last", "newest", "expected"),
    [
        pytest.param(LAST, 99 * S, NOW, id="the-read-time"),
        pytest.param(LAST, None, NOW, id="idle-the-read-time"),
        pytest.param(LAST, NOW + 10, NOW + 10, id="a-newer-accepted-row"),
        pytest.param(NOW + 5, None, NOW + 5, id="never-goes-back"),
    ],
)
def test_next_last_seen(last: int, newest: int | None, expected: int) -> None:
    assert next_last_seen(last, newest, NOW) == expected
