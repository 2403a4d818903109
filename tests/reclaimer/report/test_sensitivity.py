"""Across a sweep's settings: min_gpus per memory value, the break-even, the pool draws."""

from __future__ import annotations

import pytest

from reclaimer.report.replay_data import PolicyVerdict, Rule, SweepSummary
from reclaimer.report.sensitivity import (
    Draws,
    SettingSweep,
    as_json,
    break_even,
    lines,
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


def _pooled(gib: float, pool_seed: int, pooled: dict[str, int], own: dict[str, int | None]):
    """A setting judged by the pooled rule, with the per-queue verdicts beside it."""

    def verdicts(least):
        return tuple(PolicyVerdict(name, n, None, None, (), ()) for name, n in least.items())

    summary = SweepSummary(600.0, (0,), "", verdicts(pooled), Rule.POOLED, verdicts(own))
    return SettingSweep(gib, pool_seed, summary, [])


def test_under_the_pooled_rule_the_per_queue_minima_stand_beside():
    """A pooled p95 can pass while a small queue starves: the pooled minima across settings are
    never given without the per-queue ones."""
    sweeps = [
        _pooled(8.0, 0, {"none": 58, "forecast": 28}, {"none": 58, "forecast": 38}),
        _pooled(8.0, 1, {"none": 58, "forecast": 30}, {"none": 58, "forecast": None}),
        _pooled(12.0, 0, {"none": 58, "forecast": 48}, {"none": 58, "forecast": 58}),
        _pooled(12.0, 1, {"none": 58, "forecast": 50}, {"none": 58, "forecast": 58}),
    ]
    out = as_json(sweeps)

    assert out["rule"] == "pooled"
    assert out["break_even_gib"] == {"none": None, "forecast": 12.0}
    beside = out["per_queue"]
    assert beside["memory_sensitivity"] == [
        {"memory_peak_gib": 8.0, "min_gpus": {"none": 58, "forecast": None}},  # median of 38, -
        {"memory_peak_gib": 12.0, "min_gpus": {"none": 58, "forecast": 58}},
    ]
    assert beside["break_even_gib"] == {"none": None, "forecast": None}
    forecast_8 = beside["pool_draws"][0]["min_gpus"]["forecast"]
    assert forecast_8["by_pool_seed"] == {"0": 38, "1": None}
    text = lines(sweeps)
    assert [x for x in text if x.startswith("memory sensitivity")] == [
        "memory sensitivity (pooled rule): min_gpus by --memory-peak-gib (median over pool seeds "
        "0, 1), and the break-even",
        "memory sensitivity (per-queue rule): min_gpus by --memory-peak-gib (median over pool "
        "seeds 0, 1), and the break-even",
    ]
    assert "forecast        8: -  12: 58  break-even -" in text


def test_under_the_per_queue_rule_nothing_is_repeated_beside():
    out = as_json([_sweep(8.0, 0, none=58, forecast=38), _sweep(12.0, 0, none=58, forecast=58)])

    assert "per_queue" not in out
