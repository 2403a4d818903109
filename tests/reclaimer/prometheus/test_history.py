"""history.py's pure parts: step grid, chunking, PromQL per source, frames and node stats."""

from __future__ import annotations

import itertools
from types import MappingProxyType

import numpy as np
import pytest
from clusterviews import job_with_pods, view
from hypothesis import given, settings
from hypothesis import strategies as st

import gpu_contract as gc
from reclaimer.prometheus.coverage import Recent
from reclaimer.prometheus.fold import pod_selector, pod_shards
from reclaimer.prometheus.history import (
    PROMETHEUS_MAX_POINTS,
    UNREADABLE,
    MetricsSource,
    align,
    job_frame,
    node_stats,
    pod_frame,
    pod_utilization_query,
    time_chunks,
)
from reclaimer.prometheus.series import QueryResult, Series


def series(labels: dict[str, str], *points: tuple[float, float]) -> Series:
    return Series(MappingProxyType(labels), tuple(points))


@settings(max_examples=200, deadline=None)
@given(
    start=st.integers(0, 10_000),
    n=st.integers(1, 50_000),
    step=st.sampled_from([15.0, 60.0, 300.0]),
    max_points=st.integers(1, PROMETHEUS_MAX_POINTS),
)
def test_chunks_cover_the_grid_exactly_once_within_the_limit(start, n, step, max_points) -> None:
    s = start * step
    e = s + (n - 1) * step
    chunks = time_chunks(s, e, step, max_points)
    assert chunks[0][0] == s and chunks[-1][1] == e
    for (_, prev_end), (next_start, _) in itertools.pairwise(chunks):
        assert next_start == prev_end + step  # no gap, no overlap
    points = [round((ce - cs) / step) + 1 for cs, ce in chunks]
    assert all(1 <= p <= max_points for p in points)
    assert sum(points) == n


@pytest.mark.parametrize(
    ("t", "step", "want"),
    [(125.0, 60.0, 120.0), (120.0, 60.0, 120.0), (59.9, 60.0, 0.0), (3599.0, 300.0, 3300.0)],
)
def test_align_is_on_the_step_grid(t: float, step: float, want: float) -> None:
    assert align(t, step) == want


@pytest.mark.parametrize(
    ("source", "recorded", "must_have", "must_not"),
    [
        pytest.param(
            MetricsSource.GPU_RECLAIM,
            False,
            [gc.POD_UTILIZATION, gc.POD_ALLOCATED, "or on (namespace, pod)", "[60s]"],
            ["avg by"],
            id="exporter-raw",
        ),
        pytest.param(
            MetricsSource.GPU_RECLAIM,
            True,
            [gc.RECORDED_POD_UTILIZATION_5M, gc.RECORDED_POD_ALLOCATED],
            [gc.POD_UTILIZATION + "["],
            id="recorded",
        ),
        pytest.param(
            MetricsSource.DCGM,
            False,
            [gc.DCGM_GPU_UTIL, 'pod!=""', "/ 100", "max by", "+ 0 * sum by"],  # sum: NaN only
            ["avg by"],
            id="dcgm-percent-deduplicated",
        ),
    ],
)
def test_utilization_query_per_source(source, recorded, must_have, must_not) -> None:
    q = pod_utilization_query(source, recorded, 60.0)
    assert all(s in q for s in must_have), q
    assert not any(s in q for s in must_not), q


def test_job_frame_takes_the_busiest_pod_and_leaves_unknown_jobs_out() -> None:
    train = job_with_pods("a", "train", "q", [("t-0", 1), ("t-1", 1)])
    gappy = job_with_pods("b", "gappy", "q", [("g-0", 1), ("g-1", 1)])
    cv = view([train, gappy])
    res = QueryResult(
        "q",
        "matrix",
        (
            series({"namespace": "a", "pod": "t-0"}, (60.0, 0.1), (120.0, 0.0)),
            series({"namespace": "a", "pod": "t-1"}, (60.0, 0.7), (120.0, 0.2)),
            series({"namespace": "b", "pod": "g-0"}, (60.0, 0.0), (120.0, 0.0)),
        ),
    )
    jobs = job_frame(pod_frame([res]), cv, Recent(start=0.0, step=60.0))
    got = sorted(zip(jobs.frame["job"], jobs.frame["timestamp"], jobs.frame["value"], strict=True))
    f32 = [float(np.float32(v)) for v in (0.7, 0.2)]  # the history is float32
    assert got == [("a/train", 60.0, f32[0]), ("a/train", 120.0, f32[1])]
    assert dict(jobs.unknown) == {"b/gappy": "b/g-1: no utilization series"}
    assert jobs.problems == ("1 job(s) with unknown usage, never taken as idle",)


def test_unreadable_points_are_nan_never_zero() -> None:
    res = QueryResult(
        "q", "matrix", (series({"namespace": "a", "pod": "p"}, (60.0, UNREADABLE), (120.0, 1.5)),)
    )
    frame = pod_frame([res])
    assert frame["value"].isna().tolist() == [True, False]
    assert frame["value"].iloc[1] == 1.0  # clipped


def test_node_stats_percent_to_ratio_and_memory_ratio() -> None:
    def res(*s: Series) -> QueryResult:
        return QueryResult("q", "vector", s)

    lab = {"Hostname": "n1", "UUID": "GPU-1"}
    stats = node_stats(
        {
            "util": res(series(lab, (0.0, 50.0))),
            "used": res(series(lab, (0.0, 3000.0))),
            "free": res(series(lab, (0.0, 1000.0))),
        }
    )
    assert stats["n1"][0].utilization == 0.5
    assert stats["n1"][0].memory_used_ratio == 0.75


def test_pod_selector_escapes_names_and_shards_keep_the_order() -> None:
    assert pod_selector(["ns/a.b-0", "other/c", "ns/c"]) == r"pod=~`a\.b-0|c`"
    keys = [f"ns/p-{i}" for i in range(25)]
    shards = pod_shards(keys, 10)
    assert [len(s) for s in shards] == [10, 10, 5] and [k for s in shards for k in s] == keys
    assert pod_shards(keys, 0) == [[k] for k in keys] and pod_shards([], 10) == []
