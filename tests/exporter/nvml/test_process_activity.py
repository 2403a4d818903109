"""Which process-utilization rows to believe, how they read as an interval's average under either
reading of nvml.h, and where the next read starts from (pure)."""

from __future__ import annotations

import pytest

from exporter.nvml.process_activity import (
    FUTURE_SLACK_US,
    MIN_PERIOD_US,
    Accepted,
    Average,
    Row,
    accept,
    averages,
    next_last_seen,
    periods_in,
    sample_period,
)

S = 1_000_000  # µs per second
NOW = 100 * S
LAST = 80 * S

ROWS_CASES = [
    pytest.param([Row(1, 99 * S, 40, 10)], {1}, {1: [99 * S]}, set(), 99 * S, id="one"),
    pytest.param([Row(9, 99 * S, 40, 10)], {1}, {}, set(), None, id="not-running"),
    pytest.param([Row(0, 0, 0, 0)], {1}, {}, set(), None, id="padding"),
    pytest.param([Row(1, 99 * S, 101, 0)], {1}, {}, {1}, None, id="over-100"),
    pytest.param([Row(1, 99 * S, 0, 3000)], {1}, {}, {1}, None, id="mem-over-100"),
    pytest.param([Row(1, NOW + FUTURE_SLACK_US + 1, 10, 0)], {1}, {}, {1}, None, id="future"),
    pytest.param([Row(1, NOW + 10, 10, 0)], {1}, {1: [NOW + 10]}, set(), NOW + 10, id="slack"),
    pytest.param([Row(1, LAST, 10, 0)], {1}, {}, set(), None, id="stale"),
    pytest.param(
        [Row(1, 95 * S, 20, 0), Row(1, 90 * S, 10, 0), Row(1, 99 * S, 999, 0)],
        {1},
        {1: [90 * S, 95 * S]},
        set(),
        95 * S,
        id="several-good-rows-kept-oldest-first-junk-dropped",
    ),
    pytest.param(
        [Row(1, 95 * S, 20, 0), Row(1, 95 * S, 20, 0)], {1}, {1: [95 * S]}, set(), 95 * S, id="dup"
    ),
]


@pytest.mark.parametrize(("rows", "running", "stamps", "unknown", "newest"), ROWS_CASES)
def test_accept(
    rows: list[Row],
    running: set[int],
    stamps: dict[int, list[int]],
    unknown: set[int],
    newest: int | None,
) -> None:
    got = accept(rows, running, LAST, NOW)
    assert {pid: [r.time_stamp_us for r in rs] for pid, rs in got.rows.items()} == stamps
    assert got.unknown == unknown and got.newest_us == newest


def _accepted(*rows: Row) -> Accepted:
    return accept(rows, {r.pid for r in rows}, LAST, NOW)


PERIOD_CASES = [
    pytest.param(_accepted(Row(1, 99 * S, 40, 0), Row(2, 98 * S, 9, 0)), None, None, id="averaged"),
    pytest.param(
        _accepted(Row(1, 97 * S, 40, 0), Row(1, 99 * S, 40, 0), Row(1, 98 * S, 40, 0)),
        None,
        S,
        id="consecutive-periods",
    ),
    pytest.param(_accepted(Row(1, 95 * S, 40, 0), Row(1, 99 * S, 40, 0)), None, 4 * S, id="gap"),
    pytest.param(_accepted(Row(1, 95 * S, 40, 0), Row(1, 99 * S, 40, 0)), S, S, id="known-less"),
    pytest.param(_accepted(Row(1, 99 * S, 40, 0)), S, S, id="lone-row-keeps-the-known-period"),
    pytest.param(
        _accepted(Row(1, 99 * S - MIN_PERIOD_US + 1, 40, 0), Row(1, 99 * S, 40, 0)),
        None,
        None,
        id="closer-than-any-period-is-no-evidence",
    ),
]


@pytest.mark.parametrize(("accepted", "known", "expected"), PERIOD_CASES)
def test_sample_period(accepted: Accepted, known: int | None, expected: int | None) -> None:
    assert sample_period(accepted, known) == expected


# Interval (80 s, 100 s]: 20 one-second periods for any sampling phase.
AVERAGE_CASES = [
    pytest.param(_accepted(Row(1, 99 * S, 40, 10)), None, {1: Average(0.4, 0.1)}, id="averaged"),
    pytest.param(
        _accepted(Row(1, 90 * S, 10, 0), Row(1, 90 * S + 1, 30, 0)),
        None,
        {1: Average(0.3, 0.0)},
        id="averaged-near-duplicates-newest-wins",
    ),
    pytest.param(
        _accepted(*(Row(1, (81 + k) * S - 300_000, 50, 20) for k in range(20))),
        S,
        {1: Average(0.5, 0.2)},
        id="per-period-busy-throughout",
    ),
    pytest.param(
        _accepted(*(Row(1, (81 + k) * S - 300_000, 80, 0) for k in range(5))),
        S,
        {1: Average(0.2, 0.0)},
        id="per-period-busy-a-quarter",
    ),
    pytest.param(
        _accepted(Row(1, 90 * S + 7, 60, 0)), S, {1: Average(0.03, 0.0)}, id="per-period-lone-row"
    ),
    pytest.param(
        _accepted(*(Row(1, 80 * S + k * S // 2 + 1, 100, 0) for k in range(40))),
        2 * S,
        {1: Average(1.0, 0.0)},
        id="per-period-too-long-at-least-one-period-per-row",
    ),
]


@pytest.mark.parametrize(("accepted", "period", "expected"), AVERAGE_CASES)
def test_averages(accepted: Accepted, period: int | None, expected: dict[int, Average]) -> None:
    got = averages(accepted, period, LAST, NOW)
    assert {pid: (round(a.sm, 9), round(a.mem, 9)) for pid, a in got.items()} == {
        pid: (a.sm, a.mem) for pid, a in expected.items()
    }


@pytest.mark.parametrize(
    ("stamp", "period", "start", "end", "expected"),
    [
        pytest.param(5, 1, 0, 7, 7, id="1..7"),
        pytest.param(1, 1, 0, 7, 7, id="first"),
        pytest.param(7, 1, 0, 7, 7, id="last"),
        pytest.param(5, 3, 0, 7, 2, id="2-and-5"),
        pytest.param(99_700_000, S, LAST, NOW, 20, id="twenty-seconds"),
        pytest.param(99_700_000, S, LAST + 500_000, NOW, 20, id="window-edge-past-a-sample"),
        pytest.param(99_700_000, S, LAST + 800_000, NOW, 19, id="window-edge-before-a-sample"),
    ],
)
def test_periods_in(stamp: int, period: int, start: int, end: int, expected: int) -> None:
    assert periods_in(stamp, period, start, end) == expected


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
