"""Unknown is not idle: which jobs' recent utilization counts as known (prometheus.coverage)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from clusterviews import job_with_pods, view

from reclaimer.forecast.history import History
from reclaimer.prometheus.coverage import Recent, unknown_usage
from reclaimer.prometheus.fold import pod_history_of

STEP = 60.0
NOW = 24 * 3600.0
RECENT = Recent(start=NOW - 900.0, step=STEP, fresh_since=NOW - 300.0)


def frame(points: dict[str, list[tuple[float, float]]]) -> History:
    """The pods' points (NaN: unreadable) as the reader's per-pod history."""
    rows = [
        (key.split("/")[0], key.split("/")[1], t, v) for key, pts in points.items() for t, v in pts
    ]
    return pod_history_of(pd.DataFrame(rows, columns=["namespace", "pod", "timestamp", "value"]))


def steady(value: float = 0.0, start: float = NOW - 3600.0) -> list[tuple[float, float]]:
    return [(float(t), value) for t in np.arange(start, NOW + 1, STEP)]


def without(points: list[tuple[float, float]], *times: float) -> list[tuple[float, float]]:
    return [(t, v) for t, v in points if t not in times]


def with_value(points: list[tuple[float, float]], at: float, value: float):
    return [(t, value if t == at else v) for t, v in points]


JOB = job_with_pods("a", "j", "q", [("p-0", 1), ("p-1", 1)])


@pytest.mark.parametrize(
    ("points", "why"),
    [
        pytest.param({"a/p-0": steady(), "a/p-1": steady(0.9)}, None, id="complete"),
        pytest.param(
            {"a/p-0": with_value(steady(), NOW - 600, float("nan")), "a/p-1": steady()},
            "a/p-0: GPU unreadable at 1 recent step(s) (allocated, no utilization)",
            id="allocated-but-unreadable-step",
        ),
        pytest.param(
            {"a/p-0": without(steady(), NOW - 600, NOW - 540), "a/p-1": steady()},
            "a/p-0: 2 of 15 recent samples missing",
            id="scrapes-missing-in-the-horizon",
        ),
        pytest.param(
            {"a/p-0": without(steady(), NOW - 1800), "a/p-1": steady()},
            None,
            id="a-gap-before-the-horizon-is-history-not-now",
        ),
        pytest.param(
            {"a/p-0": [p for p in steady() if p[0] <= NOW - 420], "a/p-1": steady()},
            "a/p-0: no sample for 7m",
            id="exporter-went-quiet",
        ),
        pytest.param({"a/p-1": steady()}, "a/p-0: no utilization series", id="no-series-at-all"),
    ],
)
def test_unknown_usage(points: dict[str, list[tuple[float, float]]], why: str | None) -> None:
    got = unknown_usage(frame(points), view([JOB]), RECENT)
    assert got == ({} if why is None else {"a/j": why})


def test_a_young_pod_is_not_unknown_for_steps_before_it_ran() -> None:
    job, pods = job_with_pods("a", "young", "q", [("y-0", 1)])
    pods = [p.__class__(**{**p.__dict__, "start_time": NOW - 300.0}) for p in pods]
    cv = view([JOB, (job, pods)])
    others = {"a/p-0": steady(), "a/p-1": steady()}
    points = {**others, "a/y-0": steady(start=NOW - 120.0)}  # first sample 3 steps after start
    assert unknown_usage(frame(points), cv, RECENT) == {}
    points = {**others, "a/y-0": steady(start=NOW - 120.0)[:-1]}  # but not the newest step
    assert unknown_usage(frame(points), cv, RECENT) == {
        "a/young": "a/y-0: 1 of 3 recent samples missing"
    }


def test_the_fleet_newest_step_is_the_reference_not_the_wall_clock() -> None:
    """The last scrape may lag: every pod ending a step early is not a gap."""
    lagging = {k: steady()[:-1] for k in ("a/p-0", "a/p-1")}
    assert unknown_usage(frame(lagging), view([JOB]), RECENT) == {}
