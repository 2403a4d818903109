"""How often a pod's neighbour is busy while it is: on the trace, and the LS pods over a replay."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from simworld import P, nodes_frame, pods_frame, profile_frame

from reclaimer.policy.settings import Policy
from reclaimer.simulate import sweep
from reclaimer.simulate.planning import planner_for
from reclaimer.simulate.replay import replay_result, run_replay, simulate
from reclaimer.simulate.results import JSON_KEYS
from reclaimer.simulate.settings import SimSettings
from reclaimer.simulate.sharing.cobusy import (
    independent_share,
    neighbour_busy_share,
    offset_moments,
    trace_moments,
)
from reclaimer.simulate.sharing.load import DAY_SECONDS, ProfileOffsets, arrival_offsets
from reclaimer.simulate.strategies import Strategy
from reclaimer.simulate.trace import parse_nodes, parse_pods, parse_profiles, read_profiles


def test_the_share_counts_each_busy_pods_busy_neighbours_over_its_neighbours():
    busy = np.array([[1, 1, 0, 1], [1, 0, 0, 0], [0, 1, 1, 0]], dtype=bool)
    present = np.array([[1, 1, 1, 1], [1, 1, 1, 1], [1, 1, 1, 0]], dtype=bool)
    # moment 0: 2 busy of 3 (each sees 1 of 2 busy); 1: 2 of 3 (1 of 2 each); 2: 1 of 3 (0 of
    # 2); 3: 1 busy of 2 present (0 of 1)
    expected = (1 + 1 + 1 + 1 + 0 + 0) / (2 + 2 + 2 + 2 + 2 + 1)

    assert neighbour_busy_share(busy, present) == pytest.approx(expected)
    assert neighbour_busy_share(busy[:1], present[:1]) == 0.0  # no neighbour at all


# -- the LS pods' co-busy share over a replay ---------------------------------------------------
# two LS jobs on one time-sliced GPU, arriving together; the one profile is busy one minute in 5
ONE_IN_FIVE = profile_frame([40.0, 0.0, 0.0, 0.0, 0.0], repeat=20)
PAIR = [P("ls-1", "LS", 0.0, 3000.0), P("ls-2", "LS", 0.0, 3000.0)]


def _pair_replay(offsets: ProfileOffsets, seed: int):
    settings = replace(
        SimSettings(Strategy.TIMESLICE, seed=seed), pool_share=1.0, profile_offsets=offsets
    )
    return run_replay(
        parse_pods(pods_frame(PAIR)),
        parse_nodes(nodes_frame([1, 1])),
        parse_profiles(ONE_IN_FIVE),
        settings,
        planner=planner_for(Policy()),
    )


def test_arrival_offsets_keep_two_jobs_busy_together_and_random_ones_apart():
    aligned = _pair_replay(ProfileOffsets.ARRIVAL, seed=1)
    scattered = _pair_replay(ProfileOffsets.RANDOM, seed=1)

    # at arrival offsets both start at the same sample, so their busy minutes coincide
    assert aligned.usage.offset[0] == aligned.usage.offset[1]
    assert replay_result(aligned).ls_cobusy_share == 1.0
    # seed 1 draws offsets 51 and 95, 4 samples apart in the 5-minute cycle: their busy
    # minutes never meet
    assert scattered.usage.offset.tolist() == [51, 95]
    assert replay_result(scattered).ls_cobusy_share == 0.0
    # the same profile either way: the offsets are all that differs
    assert aligned.usage.start.tolist() == scattered.usage.start.tolist()


def test_arrival_offsets_do_not_depend_on_the_seed_and_random_ones_do():
    arrival = {s: _pair_replay(ProfileOffsets.ARRIVAL, s).usage.offset.tolist() for s in range(4)}
    drawn = {s: _pair_replay(ProfileOffsets.RANDOM, s).usage.offset.tolist() for s in range(4)}

    assert len({tuple(o) for o in arrival.values()}) == 1
    assert len({tuple(o) for o in drawn.values()}) == 4


A = [30.0, 30.0, 30.0, 0.0, 0.0]  # busy 3 minutes of 5
B = [0.0, 0.0, 30.0, 0.0, 0.0]  # busy the third of them


def _shared_pair(qos_a: str, qos_b: str, runtime_b: float, strategy: Strategy) -> float:
    """Pods `a` and `b` replay their own profiles (named after them) from their first sample,
    from time 0, on the one time-sliced GPU of node-0 (node-1 stays whole)."""
    frames = [
        profile_frame(A, repeat=20).assign(container_ip="a"),
        profile_frame(B, repeat=20).assign(container_ip="b"),
    ]
    pods = [P("a", qos_a, 0.0, 3000.0), P("b", qos_b, 0.0, runtime_b)]
    return simulate(
        parse_pods(pods_frame(pods)),
        parse_nodes(nodes_frame([1, 1])),
        parse_profiles(pd.concat(frames, ignore_index=True)),
        replace(SimSettings(strategy), pool_share=1.0),
        planner=planner_for(Policy()),
    ).ls_cobusy_share


@pytest.mark.parametrize(
    ("qos_a", "qos_b", "runtime_b", "expected"),
    [
        ("LS", "BE", 3000.0, 1 / 3),  # a is busy 3 minutes of 5, b with it in 1
        ("BE", "LS", 3000.0, 1.0),  # b's one busy minute is always one of a's
        ("LS", "LS", 3000.0, (1 + 1) / (3 + 1)),  # pooled over both pods' busy time
        ("LS", "BE", 1500.0, (5 * 1) / (10 * 3)),  # b leaves halfway: a alone for 5 cycles
        ("BE", "BE", 3000.0, 0.0),  # no LS pod
    ],
    ids=["ls-with-be", "be-with-ls", "both-ls", "neighbour-leaves", "no-ls"],
)
def test_ls_cobusy_share_on_a_two_pod_gpu_by_hand(qos_a, qos_b, runtime_b, expected):
    share = _shared_pair(qos_a, qos_b, runtime_b, Strategy.TIMESLICE)
    assert share == pytest.approx(expected, abs=5e-5)  # reported to 4 decimals


def test_ls_pods_on_whole_gpus_are_busy_with_no_neighbour():
    assert _shared_pair("LS", "LS", 3000.0, Strategy.NONE) == 0.0


def test_the_share_is_a_key_of_a_replays_json():
    assert "ls_cobusy_share" in JSON_KEYS


@pytest.mark.parametrize(
    ("cobusy", "limit", "meets"),
    [(0.04, 0.05, True), (0.05, 0.05, True), (0.06, 0.05, False), (0.6, 1.0, True)],
    ids=["under", "at", "over", "rule-off"],
)
def test_a_capacity_meets_the_slo_only_within_the_ls_cobusy_limit(cobusy, limit, meets):
    run = sweep.RunPoint(40, 0.007, 0, 100.0, ("ls", 100.0), ls_cobusy=cobusy)
    result = sweep.capacity_results([run], 600.0, max_ls_cobusy=limit)[0]

    assert result.meets_slo is meets
    assert result.ls_cobusy_by_seed == {0: cobusy}


def test_by_default_5_percent_of_ls_busy_time_may_have_a_busy_neighbour_and_no_more():
    def met(cobusy: float) -> bool:
        run = sweep.RunPoint(40, 0.007, 0, 100.0, ("ls", 100.0), ls_cobusy=cobusy)
        return sweep.capacity_results([run], 600.0)[0].meets_slo

    assert met(0.05)
    assert not met(0.0501)


# -- on the trace (GenTD26: pods sampled together, serving one application) ----------------------
@pytest.fixture(scope="module")
def gentd26(shared_data: Path):
    return read_profiles(shared_data / "alibaba-gentd26" / "pod_gpu_duty_cycle.csv.gz")


def test_the_trace_pods_are_busy_together_more_than_independent_pods_would_be(gentd26):
    pods = gentd26.drawable()
    together = neighbour_busy_share(*trace_moments(gentd26, pods))
    independent = independent_share(gentd26, pods)
    span = int(gentd26.lengths.max())
    drawn = []
    for seed in range(8):  # random offsets, drawn as the replay draws them
        rng = np.random.default_rng(seed)
        offsets = (rng.random(len(pods)) * gentd26.lengths[pods]).astype(np.int64)
        busy = offset_moments(gentd26, pods, offsets, span)
        drawn.append(neighbour_busy_share(busy, np.ones_like(busy)))

    # random offsets make neighbours independent: each is busy its own busy share of the time
    assert np.mean(drawn) == pytest.approx(independent, abs=0.01)
    # the pods at their own timestamps are correlated well beyond that
    assert together > independent + 0.1


def test_arrival_offsets_put_every_job_at_the_trace_moment_of_its_arrival(gentd26):
    pods = gentd26.drawable()
    origins = np.array(gentd26.origins)[pods]
    ends = origins + gentd26.lengths[pods] * gentd26.step
    moment = float(origins.min()) + 6 * 3600.0  # a timestamp 6 hours into the trace
    arrival = 40 * DAY_SECONDS + moment % DAY_SECONDS  # a job arriving 40 days on, at its time
    offsets = arrival_offsets(gentd26, pods, np.full(len(pods), arrival))
    covered = (origins <= moment) & (ends >= moment + 2 * 3600.0 + gentd26.step)
    assert covered.sum() >= 2

    # each starts at the sample in force at that timestamp (to the sample), whatever its origin
    started = origins[covered] + offsets[covered] * gentd26.step
    assert ((moment - started >= 0) & (moment - started < gentd26.step)).all()
    # so the pods that cover the next two hours replay them together, as the trace has them
    window = int(2 * 3600.0 / gentd26.step)
    replayed = offset_moments(gentd26, pods[covered], offsets[covered], window)
    busy, _ = trace_moments(gentd26, pods[covered])
    at = int((moment - origins[covered].min()) // gentd26.step)
    assert (replayed == busy[:, at : at + window]).all()
