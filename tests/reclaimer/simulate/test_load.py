"""The replay's load: where drawn profiles start, and the fleet's mean busy share."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pandas as pd
import pytest
from simworld import HOUR, STEP, P, nodes_frame, pods_frame, profile_frame

from reclaimer.simulate.replay import run_replay
from reclaimer.simulate.settings import SimSettings
from reclaimer.simulate.sharing.load import (
    DAY_SECONDS,
    ProfileOffsets,
    arrival_offsets,
    fleet_mean,
    scale_to_mean,
)
from reclaimer.simulate.strategies import Strategy
from reclaimer.simulate.trace import Profiles, parse_nodes, parse_pods, parse_profiles

ORIGIN = 1.6e9  # `profile_frame`'s first timestamp
ORIGIN_CLOCK = ORIGIN % DAY_SECONDS  # its own time of day: 44,800 s


# -- offsets -----------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("arrival", "expected"),
    [
        (ORIGIN_CLOCK, 0),  # the time of day of the profile's first sample
        (ORIGIN_CLOCK + 3 * STEP, 3),
        (ORIGIN_CLOCK + 3 * STEP + 59.0, 3),  # the sample in force then
        (ORIGIN_CLOCK + 3 * STEP + 9 * DAY_SECONDS, 3),  # any day: only the time of day counts
        (ORIGIN_CLOCK + 12 * STEP, 2),  # past the profile's 10 samples: it cycles
        (ORIGIN_CLOCK - STEP, 1439 % 10),  # the day's last minute: sample 1,439 of a 10-cycle
    ],
    ids=["first-sample", "third", "within-a-sample", "days-later", "wraps", "day-before"],
)
def test_a_job_starts_at_the_sample_whose_own_time_of_day_is_its_arrivals(arrival, expected):
    profiles = parse_profiles(profile_frame([0.0] * 10))

    offsets = arrival_offsets(profiles, np.array([0]), np.array([arrival]))

    assert offsets.tolist() == [expected]


def test_jobs_arriving_at_one_time_of_day_sit_at_one_moment_of_the_trace():
    # two pods sampled over the same hours, the second's samples starting 5 minutes later
    frames = [
        profile_frame([0.0] * 100).assign(container_ip="a"),
        profile_frame([0.0] * 95).assign(
            container_ip="b", timestamp_anon=lambda f: f.timestamp_anon + 300.0
        ),
    ]
    profiles = parse_profiles(pd.concat(frames, ignore_index=True))
    arrival = ORIGIN_CLOCK + 20 * STEP + 3 * DAY_SECONDS

    offsets = arrival_offsets(profiles, np.array([0, 1]), np.array([arrival, arrival]))

    assert offsets.tolist() == [20, 15]
    starts = np.array(profiles.origins) + offsets * profiles.step
    assert starts.tolist() == [ORIGIN + 20 * STEP] * 2  # the same timestamp of the trace


def test_a_job_with_its_own_profile_starts_it_at_its_first_sample_whatever_the_offsets():
    own = profile_frame([40.0, 0.0, 0.0, 0.0, 0.0], repeat=20).assign(container_ip="ls-1")
    late = [P("ls-1", "LS", 7 * 60.0, HOUR)]  # arrives 7 minutes into the day

    settings = replace(SimSettings(Strategy.NONE), profile_offsets=ProfileOffsets.ARRIVAL)
    replay = run_replay(
        parse_pods(pods_frame(late)),
        parse_nodes(nodes_frame([1])),
        parse_profiles(own),
        settings,
    )
    assert replay.usage.own == 1 and replay.usage.offset.tolist() == [0]


# -- the mean busy share -----------------------------------------------------------------------
def _fleet() -> Profiles:
    """Three pods: idle runs of 1, 2 and 6 samples between bursts of 10-30%."""
    a = profile_frame([10.0, 0.0, 20.0, 0.0, 0.0, 30.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0])
    b = profile_frame([20.0, 20.0, 0.0, 10.0, 0.0, 0.0, 10.0, 10.0, 0.0, 30.0, 30.0, 0.0])
    c = profile_frame([0.0] * 6 + [30.0] * 6)
    frames = [a.assign(container_ip="a"), b.assign(container_ip="b"), c.assign(container_ip="c")]
    return parse_profiles(pd.concat(frames, ignore_index=True))


def test_the_fleet_mean_is_the_mean_of_each_profiles_mean():
    fleet = _fleet()
    per_profile = [0.6 / 12, 1.3 / 12, 1.8 / 12]

    assert fleet_mean(fleet) == pytest.approx(np.mean(per_profile))


@pytest.mark.parametrize(
    ("target", "capped"),
    [(0.05, 0), (0.2, 0), (0.4, 12)],  # at 0.4 the 12 samples at 20% and 30% reach the cap
    ids=["down", "up", "near-every-busy-sample-at-one"],
)
def test_scaling_reaches_the_mean_and_keeps_every_idle_sample_idle(target, capped):
    fleet = _fleet()
    busy = fleet.values > 0

    scaled = scale_to_mean(fleet, target)

    assert fleet_mean(scaled) == pytest.approx(target, abs=1e-9)
    assert ((scaled.values > 0) == busy).all()  # zeros stay zeros, busy samples stay busy
    # one common factor, capped at 1: every busy sample below the cap moved by the same ratio,
    # so a busier sample never ends up below a less busy one
    factor = scaled.values[busy] / fleet.values[busy]
    below_cap = scaled.values[busy] < 1.0
    assert np.allclose(factor[below_cap], factor[below_cap][0])
    in_order = scaled.values[busy][np.argsort(fleet.values[busy], kind="stable")]
    assert (np.diff(in_order) >= 0).all()
    assert scaled.values.max() <= 1.0 and int((scaled.values == 1.0).sum()) == capped


def test_beyond_every_busy_sample_at_one_the_shortest_idle_runs_are_filled_first():
    fleet = _fleet()
    reach = float(np.mean([(fleet.values[s : s + n] > 0).mean() for s, n in
                           zip(fleet.starts, fleet.lengths, strict=True)]))  # fmt: skip
    assert reach == pytest.approx((3 / 12 + 7 / 12 + 6 / 12) / 3)

    filled = scale_to_mean(fleet, 0.6)

    assert fleet_mean(filled) == pytest.approx(0.6, abs=1e-9)
    assert (filled.values[fleet.values > 0] == 1.0).all()
    a, b, c = (filled.values[s : s + n] for s, n in zip(fleet.starts, fleet.lengths, strict=True))
    # runs of 1 sample filled whole (a's and b's), runs of 2 at the one level that lands on the
    # mean (16/36 busy, +4/36 for the 1-runs, 4 samples of 2-runs for the last 1.6/36), the
    # 6-sample runs untouched
    assert a[1] == b[2] == b[8] == b[11] == 1.0
    assert a[3] == a[4] == b[4] == b[5] == pytest.approx(0.4)
    assert (a[6:] == 0).all() and (c[:6] == 0).all()


def test_the_trace_own_mean_leaves_the_profiles_as_they_are():
    fleet = _fleet()
    same = scale_to_mean(fleet, fleet_mean(fleet))

    assert same.values == pytest.approx(fleet.values, abs=1e-12)


def test_a_mean_outside_zero_to_one_is_refused():
    with pytest.raises(ValueError, match=r"must be in \(0, 1\]"):
        scale_to_mean(_fleet(), 1.5)
