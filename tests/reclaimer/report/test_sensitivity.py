"""Across a sweep's settings: min_gpus per memory value, the break-even, the pool draws."""

from __future__ import annotations

import pytest

from reclaimer.report.replay_data import PolicyVerdict, SweepSummary
from reclaimer.report.sensitivity import (
    Draws,
    SettingSweep,
    as_json,
    break_even,
    memory_sensitivity,
)


def _sweep(gib: float | None, pool_seed: int, **least: int | None) -> SettingSweep:
    verdicts = tuple(PolicyVerdict(name, n, None, None, (), ()) for name, n in least.items())
    return SettingSweep(gib, pool_seed, SweepSummary(600.0, (0,), "", verdicts), [])


@pytest.mark.parametrize(
    ("by_seed", "median", "low_high"),
    [
        ({0: 40, 1: 38, 2: 48}, 40, (38, 48)),
        ({0: 40, 1: None, 2: 38}, 40, (38, None)),  # no min_gpus: more than any tried
        ({0: None, 1: None, 2: 38}, None, (38, None)),
        ({0: 38, 1: 48}, 48, (38, 48)),  # an even count takes the higher middle
        ({0: 38}, 38, (38, 38)),
    ],
    ids=["three", "one-null", "null-median", "even-count-high", "one-draw"],
)
def test_draws_median_and_range_count_a_null_as_more_than_any(by_seed, median, low_high):
    draws = Draws(by_seed)
    assert draws.median == median
    assert draws.range == low_high


@pytest.mark.parametrize(
    ("rows", "expected"),
    [
        # needs fewer than none at 6 and 8, not at 12: the largest such value
        ([(6.0, 58, 38), (8.0, 58, 48), (12.0, 58, 58)], 8.0),
        ([(6.0, 58, 58), (8.0, 58, None)], None),  # never fewer
        ([(6.0, None, 48), (8.0, None, None)], 6.0),  # none keeps the SLO nowhere: 48 is fewer
        ([(6.0, 58, 38), (8.0, 58, None), (12.0, 58, 50)], 12.0),  # not monotone: the largest
    ],
    ids=["monotone", "never", "none-null", "largest-not-last-fewer"],
)
def test_break_even_is_the_largest_value_needing_fewer_gpus_than_none(rows, expected):
    sweeps = [_sweep(gib, 0, none=base, timeslice=n) for gib, base, n in rows]

    assert break_even(sweeps) == {"none": None, "timeslice": expected}


def test_memory_sensitivity_takes_the_median_over_the_pool_draws():
    sweeps = [_sweep(8.0, seed, none=58, forecast=n) for seed, n in ((0, 38), (1, None), (2, 40))]

    assert memory_sensitivity(sweeps) == [
        {"memory_peak_gib": 8.0, "min_gpus": {"none": 58, "forecast": 40}}
    ]
    draws = as_json(sweeps)["pool_draws"]
    assert draws == [
        {
            "memory_peak_gib": 8.0,
            "min_gpus": {
                "none": {"by_pool_seed": {"0": 58, "1": 58, "2": 58}, "median": 58,
                         "range": [58, 58]},
                "forecast": {"by_pool_seed": {"0": 38, "1": None, "2": 40}, "median": 40,
                             "range": [38, None]},
            },
        }
    ]  # fmt: skip


def test_without_memory_there_is_no_memory_sensitivity():
    out = as_json([_sweep(None, 0, none=58), _sweep(None, 1, none=58)])

    assert "memory_sensitivity" not in out and "break_even_gib" not in out
    assert out["memory_peak_gib"] == [None]
    assert out["pool_seeds"] == [0, 1]
