"""Time-sliced GPUs in the replay: placement, contention, memory, reshape, and the sweep's rule."""

from __future__ import annotations

import itertools
from collections.abc import Mapping
from dataclasses import replace

import numpy as np
import pandas as pd
import pytest
from simworld import HOUR, STEP, P, nodes_frame, pods_frame, profile_frame

from reclaimer.decisions import Plan, Reason
from reclaimer.model import Forecast, Snapshot
from reclaimer.policy.settings import Policy, TimeSlicing
from reclaimer.simulate import sweep
from reclaimer.simulate.jobs import Event, EventKind
from reclaimer.simulate.planning import planner_for
from reclaimer.simulate.pool.members import empty_pool, keeps_a_node_whole, pool_nodes
from reclaimer.simulate.replay import run_replay, simulate
from reclaimer.simulate.results import SimResult
from reclaimer.simulate.scheduler import Cluster
from reclaimer.simulate.settings import SimSettings
from reclaimer.simulate.sharing.contention import (
    Contention,
    measured_points,
    oom_victim,
    progress_rates,
)
from reclaimer.simulate.sharing.memory import parse_memory
from reclaimer.simulate.strategies import Strategy
from reclaimer.simulate.trace import TraceError, parse_nodes, parse_pods, parse_profiles

BUSY = profile_frame([100.0] * 240)
IDLE = profile_frame([0.0] * 240)


def _memory(gib_per_sample: list[float], peak: float) -> pd.DataFrame:
    """pod-a's memory, one sample a minute (bytes; the largest value stands for `peak` GiB)."""
    return pd.DataFrame(
        {
            "timestamp_anon": [1.6e9 + STEP * i for i in range(len(gib_per_sample))],
            "value": [g * 2**30 for g in gib_per_sample],
            "container_ip": "pod-a",
        }
    )


def _replay(
    pods: list[P],
    gpus: list[int],
    strategy: Strategy,
    profile: pd.DataFrame,
    *,
    memory: pd.DataFrame | None = None,
    events: list[Event] | None = None,
    **sharing: object,
) -> SimResult:
    profiles = parse_profiles(profile)
    mem = (
        None
        if memory is None
        else parse_memory(memory, profiles, float(memory.value.max()) / 2**30)
    )
    settings = replace(SimSettings(strategy), pool_share=1.0, **sharing)  # type: ignore[arg-type]
    return simulate(
        parse_pods(pods_frame(pods)),
        parse_nodes(nodes_frame(gpus)),
        profiles,
        settings,
        planner=planner_for(Policy()),
        memory=mem,
        on_event=None if events is None else events.append,
    )


# -- the contention model ------------------------------------------------------------------------
def test_the_model_reproduces_the_measured_kuberay_points_without_switch_loss():
    # two jobs 0.877 busy alone run at 0.57x each, three 0.855 busy at 0.39x (module doc)
    assert measured_points(0.0, 0.877)[0] == (2, pytest.approx(0.57, abs=0.005))
    assert measured_points(0.0, 0.855)[1] == (3, pytest.approx(0.39, abs=0.005))
    # fully busy jobs split the GPU equally, less the switching overhead
    assert measured_points(0.05, 1.0) == ((2, 0.475), (3, pytest.approx(0.317, abs=0.001)))


def test_light_jobs_barely_slow_and_heavy_ones_do():
    light = progress_rates(np.array([[0.1], [0.2]]), 0.05)
    heavy = progress_rates(np.array([[0.9], [0.9]]), 0.05)
    mixed = progress_rates(np.array([[0.1], [0.9]]), 0.05)

    assert light[:, 0].tolist() == [1.0, 1.0]
    assert heavy[:, 0].tolist() == pytest.approx([0.475 / 0.9] * 2)
    # the light one gets all it asks; the heavy one what is left of 95%
    assert mixed[:, 0].tolist() == pytest.approx([1.0, 0.85 / 0.9])


FAIR, PESSIMISTIC = Contention.FAIR, Contention.PESSIMISTIC


@pytest.mark.parametrize(
    ("demand", "contention", "overhead", "rates"),
    [
        # two pods at 0.45: 0.9 fits the 95% fair gives, so neither slows; pessimistically
        # each waits for the other's 0.45
        ([0.45, 0.45], FAIR, 0.05, [1.0, 1.0]),
        ([0.45, 0.45], PESSIMISTIC, 0.05, [1 / 1.45, 1 / 1.45]),
        # pessimistic charges no switch overhead on top: the rate does not move with it
        ([0.45, 0.45], PESSIMISTIC, 0.30, [1 / 1.45, 1 / 1.45]),
        # an idle neighbour costs nothing under either model
        ([1.0, 0.0], FAIR, 0.15, [1.0, 1.0]),
        ([1.0, 0.0], PESSIMISTIC, 0.0, [1.0, 1.0]),
        # three light pods: fair slows none, pessimistic charges each the other two
        ([0.1, 0.2, 0.3], FAIR, 0.05, [1.0, 1.0, 1.0]),
        ([0.1, 0.2, 0.3], PESSIMISTIC, 0.0, [1 / 1.5, 1 / 1.4, 1 / 1.3]),
        # where demand passes the GPU, fair gives the light pod all it asks and the heavy one
        # the rest: the heavy pod is slower under fair (0.5) than pessimistic (1 / 1.5)
        ([1.0, 0.5], FAIR, 0.0, [0.5, 1.0]),
        ([1.0, 0.5], PESSIMISTIC, 0.0, [1 / 1.5, 1 / 2.0]),
    ],
    ids=[
        "two-at-0.45-fair-no-slowdown",
        "two-at-0.45-pessimistic-slows",
        "pessimistic-ignores-overhead",
        "idle-neighbour-fair",
        "idle-neighbour-pessimistic",
        "three-light-fair",
        "three-light-pessimistic",
        "heavy-and-light-fair",
        "heavy-and-light-pessimistic",
    ],
)
def test_the_contention_models_bound_the_rate_from_both_sides(demand, contention, overhead, rates):
    got = progress_rates(np.array(demand)[:, None], overhead, contention)
    assert got[:, 0].tolist() == pytest.approx(rates)


def test_pessimistic_contention_stays_below_the_measured_kuberay_points():
    # at the busy shares that make `fair` meet them exactly (0.877 for two, 0.855 for three)
    two = measured_points(0.0, 0.877, PESSIMISTIC)[0]
    three = measured_points(0.0, 0.855, PESSIMISTIC)[1]
    assert two == (2, pytest.approx(1 / 1.877, abs=0.0005)) and two[1] < 0.57
    assert three == (3, pytest.approx(1 / 2.71, abs=0.0005)) and three[1] < 0.39


def test_an_idle_neighbour_costs_nothing_not_even_the_switch_overhead():
    rates = progress_rates(np.array([[1.0], [0.0]]), 0.15)
    assert rates[:, 0].tolist() == [1.0, 1.0]


def test_the_pod_whose_memory_grows_is_the_one_oom_killed():
    memory = np.array([[10.0, 10.0, 10.0], [4.0, 5.0, 7.0]])  # GiB at three moments
    assert oom_victim(memory, np.array([10.0, 4.0]), 16.0) == 1  # 10 + 7 > 16 when it grows
    assert oom_victim(memory, np.array([10.0, 4.0]), 18.0) is None
    assert oom_victim(memory[:1], np.array([10.0]), 4.0) is None  # alone: it ran so in the trace


# -- the pool and its placement ------------------------------------------------------------------
def _cluster(replicas: list[int], gpus: list[int]) -> Cluster:
    return Cluster(parse_nodes(nodes_frame(gpus)), np.array(replicas, dtype=np.int64))


def test_replicas_spread_over_the_gpus_as_the_device_plugin_allocates_them():
    cluster = _cluster([2], [2])  # one node, 2 GPUs x 2 replicas = 4 nvidia.com/gpu
    spots = [cluster.place(1, 1000) for _ in range(5)]

    assert [s.devices[0] for s in spots[:4] if s] == [0, 1, 0, 1]  # fewest allocated first
    assert all(s is not None and s.replica for s in spots[:4])
    assert spots[4] is None  # 4 replicas, all taken
    assert cluster.place(1, 300) is None  # a sharing pod needs a replica too


def test_multi_gpu_pods_never_land_on_the_time_sliced_pool():
    cluster = _cluster([2, 1], [2, 2])
    spot = cluster.place(2, 1000)

    assert spot is not None and spot.node == 1 and not spot.replica
    assert cluster.place(2, 1000) is None  # the pool's 4 replicas are no room for it
    assert not _cluster([2], [2]).fits_anywhere_empty(2, 1000)


def test_lowering_replicas_evicts_nothing_and_takes_no_pod_until_they_drain():
    cluster = _cluster([4], [1])
    held = [cluster.place(1, 1000) for _ in range(3)]
    cluster.replicas[0] = 2

    assert cluster.holders[0, 0] == 3  # still running
    assert cluster.place(1, 1000) is None
    for spot in held[:2]:
        assert spot is not None
        cluster.release(spot)
    assert cluster.place(1, 1000) is not None  # one below the new count: room again


@pytest.mark.parametrize(("share", "per_count"), [(0.5, {2: 1, 8: 1}), (1.0, {2: 2, 8: 1})])
def test_the_pool_keeps_a_node_of_the_largest_size_out(share, per_count):
    nodes = parse_nodes(nodes_frame([2, 2, 8, 8]))
    pool = pool_nodes(nodes, share)
    assert {c: int((nodes.gpus[pool] == c).sum()) for c in (2, 8)} == per_count


ONE_GPU_PODS = [P("ls-1", "LS", 0.0, HOUR)]
WITH_A_2_GPU_POD = [*ONE_GPU_PODS, P("st-1", "ST", 0.0, HOUR, num_gpu=2)]


@pytest.mark.parametrize(
    ("pods", "gpus", "share", "pool", "why"),
    [
        (ONE_GPU_PODS, [1], 1.0, [True], None),
        (ONE_GPU_PODS, [8], 1.0, [True], None),  # no multi-GPU pod to keep a node whole for
        (WITH_A_2_GPU_POD, [8, 8], 1.0, [False, True], None),  # one of the two, kept whole
        (WITH_A_2_GPU_POD, [1, 1], 1.0, [True, True], None),  # a 2-GPU pod fits no node
        (
            WITH_A_2_GPU_POD, [8], 1.0, [False],
            "1 node(s) of 8 GPU(s): round(1 x 1) = 1, less the one kept whole for the trace's "
            "multi-GPU pods)",
        ),
        (
            ONE_GPU_PODS, [1, 2], 0.4, [False, False],
            "1 node(s) of 1 GPU(s): round(1 x 0.4) = 0; 1 node(s) of 2 GPU(s): round(1 x 0.4) = 0)",
        ),
    ],
    ids=[
        "one-node-one-gpu-pods", "one-8-gpu-node-one-gpu-pods", "keeps-one-for-multi-gpu-pods",
        "multi-gpu-pod-fits-nowhere", "only-node-kept-whole", "share-rounds-to-no-node",
    ],
)  # fmt: skip
def test_a_node_stays_whole_only_for_multi_gpu_pods_and_an_empty_pool_says_why(
    pods, gpus, share, pool, why
):
    jobs, nodes = parse_pods(pods_frame(pods)), parse_nodes(nodes_frame(gpus))

    assert sorted(pool_nodes(nodes, share, keeps_a_node_whole(jobs, nodes)).tolist()) == pool
    reason = empty_pool(jobs, nodes, share)
    if why is None:
        assert reason is None
    else:
        assert reason.startswith("the time-sliced pool is empty (") and reason.endswith(why)


EIGHTY = profile_frame([80.0] * 240)  # demand 0.8 throughout


def test_two_busy_one_gpu_jobs_on_a_one_node_trace_share_its_gpu():
    """Two 80%-busy jobs and one 1-GPU node, the whole of it in the pool: they run together at
    0.475 / 0.8 of their speed (95% of the GPU split evenly) instead of one queueing."""
    sliced = _replay(TWO, [1], Strategy.TIMESLICE, EIGHTY, replicas=2)
    whole = _replay(TWO, [1], Strategy.NONE, EIGHTY)

    assert sliced.timesliced_gpus == 1
    assert sliced.guaranteed_wait_p95_s == 0.0
    assert sliced.guaranteed_slowdown_p95 == pytest.approx(0.8 / 0.475, rel=0.01)
    assert whole.guaranteed_wait_p95_s > HOUR  # one of them waits for the other's 2 hours


# -- replays -------------------------------------------------------------------------------------
TWO = [P("ls-1", "LS", 0.0, 2 * HOUR), P("ls-2", "LS", 0.0, 2 * HOUR)]


def test_two_busy_jobs_time_sliced_on_one_gpu_slow_each_other_down():
    sliced = _replay(TWO, [1, 1], Strategy.TIMESLICE, BUSY, switch_overhead=0.05)
    whole = _replay(TWO, [1, 1], Strategy.NONE, BUSY)

    assert sliced.timesliced_gpus == 2  # no multi-GPU pod: no node is kept whole for one
    assert whole.guaranteed_slowdown_p95 == 1.0
    # both start on the pool's two replicas (pool first) and share one GPU at 0.475x each
    assert sliced.guaranteed_slowdown_p95 == pytest.approx(1 / 0.475, rel=0.01)
    # one GPU busy 95% of the time, the other idle, against two GPUs busy whole
    assert sliced.busy_share_physical == pytest.approx(0.95 / 2, rel=0.01)
    assert whole.busy_share_physical == pytest.approx(1.0, rel=0.01)


def test_the_switch_overhead_flag_moves_the_slowdown():
    slow = [
        _replay(TWO, [1, 1], Strategy.TIMESLICE, BUSY, switch_overhead=o).guaranteed_slowdown_p95
        for o in (0.0, 0.05, 0.15)
    ]
    assert slow == pytest.approx([2.0, 1 / 0.475, 1 / 0.425], rel=0.01)


HALF_BUSY = profile_frame([45.0] * 240)  # demand 0.45 throughout


def test_two_pods_at_045_slow_only_under_pessimistic_contention():
    """One GPU, time-sliced: neither waits, so both run on it together."""
    fair = _replay(TWO, [1], Strategy.TIMESLICE, HALF_BUSY)
    pessimistic = _replay(TWO, [1], Strategy.TIMESLICE, HALF_BUSY, contention=PESSIMISTIC)

    assert fair.timesliced_gpus == pessimistic.timesliced_gpus == 1
    assert fair.guaranteed_wait_p95_s == pessimistic.guaranteed_wait_p95_s == 0.0
    assert fair.guaranteed_slowdown_p95 == 1.0  # 0.9 of the GPU fits its 95%
    assert pessimistic.guaranteed_slowdown_p95 == pytest.approx(1.45, rel=0.01)


def test_idle_jobs_share_a_gpu_for_free():
    sliced = _replay(TWO, [1, 1], Strategy.TIMESLICE, IDLE)
    assert sliced.guaranteed_slowdown_p95 == 1.0


def test_co_located_jobs_exceeding_the_device_are_oom_killed_and_restart_in_place():
    events: list[Event] = []
    # 10 GiB each on a 16 GiB T4: two together do not fit
    memory = _memory([10.0] * 240, 10.0)
    late = [*TWO, P("ls-late", "LS", 10 * HOUR, HOUR)]  # keeps the replay going
    result = _replay(late, [1, 1], Strategy.TIMESLICE, BUSY, memory=memory, events=events)
    kills = [e for e in events if e.kind is EventKind.OOM_KILLED]

    assert result.oom_kills == len(kills) == 6
    assert result.guaranteed_oom_kills == result.oom_kills  # LS is guaranteed
    assert {e.job for e in kills} == {1}  # the second placed grows past the device, at once
    assert kills[0].at == 0.0
    # its container restarts in its pod, next to ls-1: at once, then after the kubelet's
    # back-off (10 s, doubling), and crash-loops until its Job's backoffLimit (6) fails it
    assert [b.at - a.at for a, b in itertools.pairwise(kills)] == [0, 10, 20, 40, 80]
    assert (result.failed_jobs, result.guaranteed_failed_jobs) == (1, 1)
    finished = {e.job: e.at for e in events if e.kind is EventKind.FINISHED}
    assert sorted(finished) == [0, 2]


def test_without_a_memory_file_no_job_is_oom_killed():
    assert _replay(TWO, [1, 1], Strategy.TIMESLICE, BUSY).oom_kills == 0


@pytest.mark.parametrize("whole", [False, True], ids=["started-at-2", "started-whole"])
def test_forecast_raises_an_underused_pool_in_two_cycles_once_its_load_history_allows(
    whole: bool,
) -> None:
    """The raise passes the planner's gates on what the replay reads: device memory in bytes,
    each pod's memory, and the node's hourly load (`sim_sharing.loadlog`): the load outlook needs a
    week of samples before its calibration origins are covered, so the pool stays as it started
    (2 replicas, or whole) until then, and the raise then takes the actuator's two cycles. Twelve
    10-minute jobs in the first hour give the memory gate its pods' peaks (until the hour's read
    sees them, too few)."""
    short = [P(f"ls-s{k}", "LS", 0.0, 600.0) for k in range(12)]
    pods = [P("ls-1", "LS", 0.0, 8 * 24 * HOUR), *short]
    profiles = parse_profiles(IDLE)
    nodes = parse_nodes(nodes_frame([1, 1]))
    # half the two nodes: one is the pool (the draw's), the other stays whole
    settings = replace(
        SimSettings(Strategy.FORECAST), pool_share=0.5, replicas=2, forecast_start_whole=whole
    )
    pooled = int(np.flatnonzero(pool_nodes(nodes, 0.5))[0])
    # the contention rule off: after the first day one pod runs, too few for the fleet's busy
    # share (`plan.contend`), and this world measures the other gates
    ctl = planner_for(Policy(time_slicing=TimeSlicing(max_cobusy_share=1.0)))
    seen: list[tuple[float, Plan]] = []

    def observed(snapshot: Snapshot, forecasts: Mapping[str, Forecast], now: float) -> Plan:
        seen.append((now, ctl.plan_reshapes(snapshot, forecasts, now)))
        return seen[-1][1]

    replay = run_replay(
        parse_pods(pods_frame(pods)),
        nodes,
        profiles,
        settings,
        planner=replace(ctl, plan_reshapes=observed),
        memory=parse_memory(_memory([1.0] * 240, 1.0), profiles, 1.0),
    )

    first = next(i for i, (_, p) in enumerate(seen) if p.actions)
    before = {
        (t < HOUR, s.reason)
        for t, p in seen[:first]
        for s in p.skipped
        if s.target == nodes.names[pooled]
    }
    assert {r for early, r in before if early} == {Reason.NO_MEMORY_HEADROOM}
    later = {r for early, r in before if not early}
    # started whole, its one replica runs the short jobs one at a time: measured later
    assert later == ({Reason.NO_LOAD_HISTORY} | ({Reason.NO_MEMORY_HEADROOM} if whole else set()))
    raised_at, plan = seen[first]
    assert raised_at > 5 * 24 * HOUR  # a week of hourly load covers enough origins
    assert [(a.target, a.to_replicas) for a in plan.actions] == [(nodes.names[pooled], 4)]
    assert [a.from_replicas for a in plan.actions] == [1 if whole else 2]
    # the first cycle writes the key, the next relabels: 2 (or 1) -> 4
    assert replay.last_reshape == {pooled: raised_at + 300.0}
    assert replay.cluster.replicas.tolist() == [4 if i == pooled else 1 for i in range(2)]
    assert replay.reshapes == 1


# -- memory series and the sweep's rule ---------------------------------------------------------
def test_a_jobs_memory_is_read_on_its_profiles_grid_and_scaled_to_the_peak():
    profiles = parse_profiles(profile_frame([0.0, 50.0, 0.0, 50.0]))
    memory = _memory([2.0, 4.0, 8.0, 4.0], 8.0)
    gib = parse_memory(memory.iloc[[0, 2, 3]], profiles, 16.0)  # sample 1 missing
    assert gib.tolist() == [4.0, 4.0, 16.0, 8.0]  # filled from the previous sample


def test_a_profile_without_a_memory_series_is_a_clear_error():
    profiles = parse_profiles(profile_frame([0.0, 50.0]))
    other = _memory([1.0, 1.0], 1.0).assign(container_ip="pod-b")
    with pytest.raises(TraceError, match="no series for 1 utilization pod"):
        parse_memory(other, profiles, 16.0)


def test_a_capacity_meets_the_slo_only_without_slowdown_or_guaranteed_oom_kills():
    def met(slowdown: float, kills: int) -> bool:
        run = sweep.RunPoint(40, 0.007, 0, 100.0, ("ls", 100.0), slowdown, kills)
        return sweep.capacity_results([run], 600.0, 1.10)[0].meets_slo

    assert met(1.05, 0)
    assert not met(1.2, 0)
    assert not met(1.0, 1)
