"""A pool node at 1 replica offers whole GPUs (`sim_scheduler.Cluster`): a multi-GPU pod takes
the ones no pod holds, held as the node's replicas, and frees them as it leaves; the replay's
`forecast`, whose pool starts whole, runs a multi-GPU job there instead of leaving it waiting."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
from simworld import HOUR, P, nodes_frame, pods_frame, profile_frame

from reclaimer.policy.settings import Policy
from reclaimer.simulate.jobs import Event, EventKind
from reclaimer.simulate.planning import planner_for
from reclaimer.simulate.replay import run_replay
from reclaimer.simulate.scheduler import Cluster
from reclaimer.simulate.settings import SimSettings
from reclaimer.simulate.strategies import Strategy
from reclaimer.simulate.trace import parse_nodes, parse_pods, parse_profiles

IDLE = profile_frame([0.0] * 240)


def _whole_pool(gpus: list[int], pool: list[bool]) -> Cluster:
    """Every node at 1 replica; `pool` says which are in the pool."""
    nodes = parse_nodes(nodes_frame(gpus))
    ones = np.ones(len(gpus), dtype=np.int64)
    return Cluster(nodes, ones, np.array(pool, dtype=bool))


def test_a_multi_gpu_pod_takes_a_whole_pool_nodes_free_gpus_and_gives_them_back() -> None:
    cluster = _whole_pool([2], [True])
    spot = cluster.place(2, 1000)
    assert spot is not None and (spot.node, spot.devices, spot.pooled) == (0, (0, 1), True)
    assert cluster.holders[0].tolist() == [1, 1]
    assert cluster.place(1, 1000) is None  # its GPUs are its replicas: none left
    cluster.release(spot)
    assert cluster.holders[0].tolist() == [0, 0]
    one = cluster.place(1, 1000)
    assert one is not None and one.replica


def test_a_gpu_a_replica_holds_is_no_whole_gpu() -> None:
    cluster = _whole_pool([2], [True])
    one = cluster.place(1, 1000)
    assert one is not None and one.replica
    assert cluster.place(2, 1000) is None
    assert cluster.could_fit([one], {(2, 1000)})  # once it leaves, both are whole again


def test_raised_pool_nodes_take_no_multi_gpu_pod() -> None:
    cluster = _whole_pool([2], [True])
    cluster.replicas[0] = 2
    assert cluster.place(2, 1000) is None


def _started(strategy: Strategy, whole: bool) -> dict[str, float]:
    """Two 2-GPU jobs at once on two 2-GPU nodes, one of them the pool: when each starts."""
    pods = [P("bu-1", "Burstable", 0.0, HOUR, num_gpu=2), P("bu-2", "Burstable", 0.0, HOUR, 2)]
    events: list[Event] = []
    settings = SimSettings(strategy, pool_share=1.0, forecast_start_whole=whole)
    replay = run_replay(
        parse_pods(pods_frame(pods)),
        parse_nodes(nodes_frame([2, 2])),
        parse_profiles(IDLE),
        replace(settings, replicas=2),
        planner=planner_for(Policy()),
        on_event=events.append,
    )
    return {replay.keys[e.job]: e.at for e in events if e.kind is EventKind.STARTED}


def test_forecasts_whole_pool_runs_a_multi_gpu_job_the_raised_pool_keeps_waiting() -> None:
    assert _started(Strategy.FORECAST, whole=True) == {"burstable/bu-1": 0.0, "burstable/bu-2": 0.0}
    at_two = _started(Strategy.FORECAST, whole=False)
    assert at_two["burstable/bu-1"] == 0.0 and at_two["burstable/bu-2"] >= HOUR


def test_a_whole_pool_node_is_any_whole_node_to_a_one_gpu_pod() -> None:
    """Best fit over whole GPUs, the pool's whole nodes among them: a one-GPU pod takes the
    off-pool node's single GPU and leaves the pool node's two whole for a 2-GPU pod; the next
    one-GPU pod takes a replica of the pool node, and a sharing pod, with no room off the pool,
    a whole GPU there too."""
    cluster = _whole_pool([2, 1, 2], [True, False, True])
    first = cluster.place(1, 1000)
    assert first is not None and (first.node, first.replica) == (1, False)
    wide = cluster.place(2, 1000)
    assert wide is not None and (wide.node, wide.pooled) == (0, True)
    second = cluster.place(1, 1000)
    assert second is not None and (second.node, second.replica) == (2, True)
    shared = cluster.place(1, 300)
    assert shared is not None and (shared.node, shared.replica) == (2, True)
    assert cluster.place(1, 300) is None


def test_raised_pool_nodes_still_come_first_for_one_gpu_pods() -> None:
    cluster = _whole_pool([1, 1], [False, True])
    cluster.replicas[1] = 2
    spot = cluster.place(1, 1000)
    assert spot is not None and (spot.node, spot.replica) == (1, True)
