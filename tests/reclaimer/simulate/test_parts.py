"""The simulator's parts: trace parsing, milli-GPU placement, profile arithmetic."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from simworld import P, nodes_frame, pods_frame, profile_frame

from reclaimer.simulate.scheduler import Cluster
from reclaimer.simulate.sharing.usage import assign_usage
from reclaimer.simulate.trace import TraceError, parse_nodes, parse_pods, parse_profiles


def test_pods_that_never_ran_or_ask_for_no_gpu_are_left_out():
    frame = pods_frame([P("a", "LS", 5.0, 10.0), P("b", "BE", 1.0, 10.0), P("c", "BE", 2.0, 3.0)])
    frame.loc[2, "scheduled_time"] = np.nan
    frame.loc[0, "num_gpu"] = 0

    jobs = parse_pods(frame)

    assert jobs.names == ("b",)
    assert jobs.queues == ("be",)
    assert list(jobs.runtime) == [10.0]


def test_a_sharing_pod_holds_its_share_of_one_gpu():
    jobs = parse_pods(pods_frame([P("s", "BE", 0.0, 60.0, 1, 460), P("w", "LS", 0.0, 60.0, 2)]))

    assert list(jobs.gpus) == [0.46, 2.0]


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (lambda f: f.drop(columns=["qos"]), "missing column(s) qos"),
        (lambda f: f.assign(num_gpu="two"), "num_gpu is not numeric"),
        (lambda f: f.assign(gpu_milli=1500), "gpu_milli must be in"),
        (lambda f: f.assign(num_gpu=2, gpu_milli=500), "must ask for 1 GPU"),
        (lambda f: f.assign(deletion_time=-1.0), "deletion_time before scheduled_time"),
        (lambda f: f.iloc[0:0], "no pod both ran"),
    ],
    ids=["no-qos", "text-gpus", "milli-too-big", "shared-multi-gpu", "negative-runtime", "empty"],
)
def test_bad_pod_lists_are_refused_with_a_reason(change, message):
    frame = change(pods_frame([P("a", "LS", 0.0, 10.0)]))

    with pytest.raises(TraceError, match=message.replace("(", r"\(").replace(")", r"\)")):
        parse_pods(frame)


@pytest.mark.parametrize(
    ("scale", "expected"),
    [(1.0, [8, 8, 8, 8, 2, 2, 2, 2]), (0.5, [8, 8, 2, 2]), (0.01, [8])],
    ids=["all", "half", "tiny-keeps-one-largest"],
)
def test_capacity_scale_keeps_that_share_of_each_node_size(scale, expected):
    nodes = parse_nodes(nodes_frame([8, 8, 8, 8, 2, 2, 2, 2]), scale)

    assert sorted(nodes.gpus.tolist(), reverse=True) == expected


def test_profiles_are_ratios_on_a_regular_step_with_gaps_filled():
    frame = profile_frame([10.0] * 70)
    frame = frame.drop(index=[5, 6])  # a two-sample gap
    frame.loc[7, "value"] = 50.0

    profiles = parse_profiles(frame)

    assert profiles.step == 60.0
    assert profiles.lengths.tolist() == [70]
    assert profiles.values[5] == profiles.values[6] == 0.10  # carried forward
    assert profiles.values[7] == 0.5


def test_short_profiles_are_kept_for_their_own_pod_but_drawn_only_when_none_is_long():
    short = profile_frame([1.0] * 10).assign(container_ip="short")
    long = profile_frame([2.0] * 70).assign(container_ip="long")

    both = parse_profiles(pd.concat([short, long], ignore_index=True))
    only_short = parse_profiles(short)

    assert both.names == ("long", "short") and both.lengths.tolist() == [70, 10]
    assert both.drawable().tolist() == [0]
    assert only_short.drawable().tolist() == [0]


PLACEMENTS = [
    ("two-shares-pack-one-gpu", [1], [(1, 460), (1, 460)], [True, True]),
    ("third-share-overflows", [1], [(1, 460), (1, 460), (1, 460)], [True, True, False]),
    ("whole-gpu-needs-an-untouched-device", [1], [(1, 100), (1, 1000)], [True, False]),
    ("gang-needs-one-node", [2, 2], [(3, 1000)], [False]),
    ("gang-fits-the-big-node", [2, 4], [(3, 1000), (1, 1000)], [True, True]),
    ("best-fit-keeps-the-big-node-free", [4, 1], [(1, 1000), (4, 1000)], [True, True]),
]


@pytest.mark.parametrize(
    ("gpus", "requests", "expected"), [p[1:] for p in PLACEMENTS], ids=[p[0] for p in PLACEMENTS]
)
def test_placement_in_milli_gpus(gpus, requests, expected):
    cluster = Cluster(parse_nodes(nodes_frame(gpus)))

    placed = [cluster.place(num, milli) is not None for num, milli in requests]

    assert placed == expected


def test_released_gpus_can_be_placed_again():
    cluster = Cluster(parse_nodes(nodes_frame([1])))
    spot = cluster.place(1, 1000)
    assert spot is not None and cluster.place(1, 300) is None

    cluster.release(spot)

    assert cluster.place(1, 300) is not None


def _usage(values: list[float], seed: int = 0):
    frame = pd.DataFrame(
        {
            "value": values,
            "timestamp_anon": [60.0 * i for i in range(len(values))],
            "container_ip": "p",
        }
    )
    return assign_usage(parse_profiles(frame), 1, seed, 1800.0, 900.0, threshold=0.05)


def test_busy_seconds_over_a_whole_cycle_is_the_profile_total():
    values = [float(v % 7) for v in range(100)]
    usage = _usage(values)

    busy = usage.busy_seconds(0, 0.0, 100 * 60.0)

    assert busy == pytest.approx(sum(values) / 100 * 60.0)


@settings(max_examples=50, deadline=None)
@given(
    a=st.floats(0, 50_000),
    b=st.floats(0, 50_000),
    c=st.floats(0, 50_000),
    seed=st.integers(0, 100),
)
def test_busy_seconds_add_up_over_consecutive_segments(a, b, c, seed):
    a, b, c = sorted((a, b, c))
    usage = _usage([float(v * 13 % 100) for v in range(80)], seed)

    whole = usage.busy_seconds(0, a, c)
    parts = usage.busy_seconds(0, a, b) + usage.busy_seconds(0, b, c)

    assert whole == pytest.approx(parts, abs=1e-6)
    assert 0.0 <= whole <= (c - a) + 1e-6


@pytest.mark.parametrize(
    ("threshold", "working"),
    [(0.05, 3), (0.5, 1), (0.01, 4)],
    ids=["default-5%", "high-threshold", "low-threshold"],
)
def test_work_seconds_count_samples_at_or_above_the_threshold_whatever_their_level(
    threshold, working
):
    # percent per minute: 0 and 2 are idle at 5%, 5 (at the threshold), 20 and 50 are work
    values = [0.0, 2.0, 5.0, 20.0, 50.0] * 20
    frame = pd.DataFrame(
        {"value": values, "timestamp_anon": [60.0 * i for i in range(100)], "container_ip": "p"}
    )
    usage = assign_usage(parse_profiles(frame), 1, 3, 1800.0, 900.0, threshold=threshold)

    assert usage.work_seconds(0, 0.0, 100 * 60.0) == pytest.approx(20 * working * 60.0)
    # any whole number of 5-minute cycles holds the same share, wherever it starts
    assert usage.work_seconds(0, 7 * 60.0, 17 * 60.0) == pytest.approx(2 * working * 60.0)
