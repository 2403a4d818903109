"""The capacity sweep's core: capacity points, the range, and the min_gpus rule with its caveats."""

from __future__ import annotations

import numpy as np
import pytest
from simworld import HOUR, P, nodes_frame, pods_frame

from reclaimer.report.replay_data import CapacityResult, Rule
from reclaimer.simulate import sweep
from reclaimer.simulate.results import Tally, result_of
from reclaimer.simulate.trace import parse_nodes, parse_pods

SLO = 600.0


def _results(p95_by_gpus: dict[int, float | list[float]]) -> tuple[CapacityResult, ...]:
    """One guaranteed queue (`ls`): its own p95 is the pooled one, so either rule reads it."""
    runs = []
    for gpus, p95 in p95_by_gpus.items():
        for seed, value in enumerate(p95 if isinstance(p95, list) else [p95]):
            runs.append(sweep.RunPoint(gpus, gpus / 1000, seed, value, ("ls", value)))
    return sweep.capacity_results(runs, SLO)


@pytest.mark.parametrize(
    ("p95", "least", "reason_has", "caveat_has"),
    [
        ({38: 4000.0, 40: 900.0, 48: 70.0, 58: 0.0}, 48, None, "misses it at 40 GPUs"),
        ({38: 4000.0, 40: 900.0, 48: 700.0}, None, "at 48 GPUs, the largest tried", None),
        ({38: 500.0, 40: 900.0, 48: 700.0}, None, "largest tried", "meets the SLO at 38 GPUs"),
        ({38: 900.0, 40: 500.0, 48: 700.0, 58: 0.0}, 58, None, "also meets the SLO at 40 GPUs"),
        ({38: 100.0, 40: 0.0}, 38, None, "the minimum is at most 38"),
        ({38: [100.0, 700.0], 40: [0.0, 0.0]}, 40, None, "misses it at 38 GPUs"),
        ({38: 600.0, 40: 0.0}, 38, None, "at most 38"),
    ],
    ids=[
        "monotone",
        "none-met",
        "met-only-below-a-miss",
        "non-monotone-takes-the-upper-run",
        "met-at-the-floor-is-an-upper-bound",
        "one-seed-missing-is-a-miss",
        "at-the-slo-meets-it",
    ],
)
def test_min_gpus_is_where_the_slo_keeps_holding(p95, least, reason_has, caveat_has):
    found, reason, caveats = sweep.minimum(_results(p95))

    assert found == least
    if reason_has is None:
        assert reason is None
    else:
        assert reason_has in reason
    if caveat_has is not None:
        assert any(caveat_has in c for c in caveats), caveats


def test_savings_are_against_none_and_null_when_unknown():
    per_strategy = {
        "none": _results({30: 9000.0, 38: 4000.0, 40: 900.0, 48: 70.0}),
        "allocation": _results({30: 9000.0, 38: 2000.0, 40: 350.0, 48: 0.0}),
        "threshold": _results({30: 9e5, 38: 3e4, 40: 3e4, 48: 3000.0}),
        "forecast": _results({30: 100.0, 38: 0.0, 40: 0.0, 48: 0.0}),
    }

    verdicts = {v.strategy: v for v in sweep.verdicts(per_strategy)}

    assert [v.strategy for v in sweep.verdicts(per_strategy)] == list(per_strategy)
    assert (verdicts["none"].min_gpus, verdicts["none"].gpus_saved_vs_none) == (48, 0)
    assert (verdicts["allocation"].min_gpus, verdicts["allocation"].gpus_saved_vs_none) == (40, 8)
    assert verdicts["threshold"].min_gpus is None
    assert verdicts["threshold"].gpus_saved_vs_none is None
    assert "largest tried" in verdicts["threshold"].reason
    assert verdicts["forecast"].min_gpus == 30  # at the floor: only an upper bound
    assert verdicts["forecast"].gpus_saved_vs_none is None
    assert "upper bound" in verdicts["forecast"].reason


def test_no_saving_when_none_never_meets_the_slo():
    per_strategy = {
        "none": _results({38: 4000.0, 40: 900.0}),
        "forecast": _results({38: 4000.0, 40: 100.0}),
    }

    none, ours = sweep.verdicts(per_strategy)

    assert none.min_gpus is None and none.gpus_saved_vs_none is None
    assert ours.min_gpus == 40 and ours.gpus_saved_vs_none is None
    assert "`none` keeps the SLO at no capacity tried" in ours.reason


def test_capacity_points_are_exact_and_the_scale_gives_them():
    frame = nodes_frame([8] * 10 + [2] * 20 + [1] * 4)
    every = parse_nodes(frame)

    points = sweep.capacity_points(every)

    assert [p.gpus for p in points] == sorted({p.gpus for p in points})
    assert points[-1].gpus == 8 * 10 + 2 * 20 + 4
    for point in points:
        assert (
            int(parse_nodes(nodes_frame([8] * 10 + [2] * 20 + [1] * 4), point.scale).gpus.sum())
            == point.gpus
        )
    assert points[0].gpus == 8  # the largest node is always kept


def test_chosen_points_by_count_and_range():
    points = sweep.capacity_points(parse_nodes(nodes_frame([1, 1, 1, 1, 1])))

    assert [p.gpus for p in sweep.chosen_points(points, "2,4")] == [2, 4]
    assert [p.gpus for p in sweep.chosen_points(points, "2-4")] == [2, 3, 4]


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ("7", "no capacity scale gives [7] GPUs"),
        ("2,x", "expected a number of GPUs"),
        ("4-2", "no capacity in 4-2 GPUs"),
        ("0", "must be positive"),
        ("8-9", "no capacity in 8-9"),
    ],
    ids=["unreachable", "not-a-number", "empty-range", "zero", "range-above"],
)
def test_bad_capacities_say_what_the_node_list_gives(spec, message):
    points = sweep.capacity_points(parse_nodes(nodes_frame([1, 1, 1, 1, 1])))

    with pytest.raises(ValueError) as error:
        sweep.chosen_points(points, spec)

    assert message in str(error.value)


def test_the_default_range_runs_from_half_the_peak_to_the_peak():
    jobs = parse_pods(
        pods_frame([P(f"p{i}", "LS", i * 600.0, 4 * HOUR, num_gpu=2) for i in range(5)])
    )
    points = sweep.capacity_points(parse_nodes(nodes_frame([2] * 12)))

    peak = sweep.peak_demand(jobs)
    chosen = sweep.default_points(points, peak)

    assert peak == 10.0  # five 2-GPU jobs overlap
    assert [p.gpus for p in chosen] == [6, 8, 10]


def _runs(burstable: float) -> list[sweep.RunPoint]:
    """Pooled p95 0 s at 30 and 38 GPUs; the burstable queue's own p95 `burstable` s at 30."""
    return [
        sweep.RunPoint(30, 0.005, 0, 0.0, worst_queue=("burstable", burstable)),
        sweep.RunPoint(38, 0.006, 0, 0.0, worst_queue=("burstable", 128.0)),
    ]


def test_the_per_queue_rule_is_the_default_and_the_pooled_rule_names_the_queue_it_hides():
    by_default = sweep.capacity_results(_runs(445_005.0), 600.0)
    assert [c.meets_slo for c in by_default] == [False, True]  # burstable waits 5 days at 30
    assert sweep.minimum(by_default)[0] == 38
    assert by_default[0].as_dict()["worst_guaranteed_queue"] == {
        "0": {"queue": "burstable", "wait_p95_s": 445_005.0}
    }
    pooled = sweep.capacity_results(_runs(445_005.0), 600.0, rule=Rule.POOLED)
    least, _, caveats = sweep.minimum(pooled)
    assert least == 30
    assert any(
        "at 30 GPUs the pooled p95 keeps the SLO but queue burstable's own wait p95 is 445,005 s"
        " (seed 0); the per-queue rule (the default) holds every guaranteed queue to the SLO" in c
        for c in caveats
    )


def test_the_per_queue_rule_reads_each_queues_own_p95_not_the_pooled_one():
    """Waits 0 s and 1,000 s in one queue, the same in another: numpy's p95 of each queue is
    950 s, of the four pooled 1,000 s (interpolated between the two 1,000 s waits). With an SLO
    of 960 s every queue keeps it, the pooled p95 does not."""
    assert float(np.percentile([0.0, 1000.0], 95)) == 950.0
    assert float(np.percentile([0.0, 0.0, 1000.0, 1000.0], 95)) == 1000.0
    runs = [sweep.RunPoint(30, 0.005, 0, 1000.0, ("ls", 950.0))]
    assert sweep.capacity_results(runs, 960.0)[0].meets_slo
    assert not sweep.capacity_results(runs, 960.0, rule=Rule.POOLED)[0].meets_slo


def test_no_caveat_when_every_queue_keeps_the_slo():
    pooled = sweep.capacity_results(_runs(300.0), 600.0, rule=Rule.POOLED)
    least, _, caveats = sweep.minimum(pooled)
    assert least == 30 and not any("own wait p95" in c for c in caveats)


def test_a_capacity_none_meets_names_the_pooled_and_the_worst_queues_p95():
    runs = [sweep.RunPoint(30, 0.005, 1, 700.0, ("burstable", 9_000.0))]
    _, reason, _ = sweep.minimum(sweep.capacity_results(runs, 600.0))
    assert reason == (
        "no capacity tried meets the SLO (at 30 GPUs, the largest tried, the pooled wait p95 is "
        "700 s, queue burstable's own wait p95 is 9,000 s (seed 1))"
    )


def test_a_replay_names_its_worst_guaranteed_queue_by_its_own_p95():
    """100 LS jobs never wait, 5 burstable jobs wait a day: pooled p95 0, burstable's a day;
    the reclaimable queue's longer waits are not counted."""
    tally = Tally()
    for _ in range(100):
        tally.waited("ls", 0.0)
    for _ in range(5):
        tally.waited("burstable", 86400.0)
        tally.waited("be", 10 * 86400.0)
    result = result_of("none", tally, 10, 86400.0, frozenset({"ls", "burstable"}))
    assert result.guaranteed_wait_p95_s == 0.0
    assert result.worst_guaranteed_queue == {"queue": "burstable", "wait_p95_s": 86400.0}
    empty = result_of("none", Tally(), 10, 86400.0, frozenset({"ls"}))
    assert empty.worst_guaranteed_queue == {"queue": "", "wait_p95_s": 0.0}


@pytest.mark.parametrize(("failed", "met"), [(0, True), (1, False)], ids=["none", "one"])
def test_a_capacity_where_a_guaranteed_job_failed_misses_the_slo(failed, met):
    """A guaranteed job failed by its Job's backoffLimit (its OOM kills aside) fails the rule."""
    run = sweep.RunPoint(40, 0.007, 0, 100.0, ("ls", 100.0), failed_jobs=failed)
    (result,) = sweep.capacity_results([run], SLO)
    assert result.meets_slo is met
    assert result.as_dict()["guaranteed_failed_jobs"] == {"0": failed}
    if not met:
        reason = sweep.minimum((result,))[1]
        assert reason is not None and "1 guaranteed jobs failed" in reason
