"""The report's timeline of a replay: its bins add up to the replay's own totals."""

from __future__ import annotations

import pandas as pd
import pytest
from simworld import BURSTY, HOUR, STEP, WORKING_4_OF_5, P, nodes_frame, pods_frame

from reclaimer.policy.settings import Policy
from reclaimer.simulate.planning import planner_for
from reclaimer.simulate.replay import simulate
from reclaimer.simulate.settings import SimSettings
from reclaimer.simulate.sharing.memory import parse_memory
from reclaimer.simulate.sharing.restarts import ColdStarts
from reclaimer.simulate.strategies import Strategy
from reclaimer.simulate.timeline import record_run
from reclaimer.simulate.trace import parse_nodes, parse_pods, parse_profiles

TRACE = [
    P("be-1", "BE", 0.0, 20 * HOUR),
    P("be-2", "BE", 0.0, 20 * HOUR),
    P("be-3", "BE", HOUR, 10 * HOUR, gpu_milli=500),
    P("ls-1", "LS", 3 * HOUR, HOUR),
    P("ls-2", "LS", 5 * HOUR, 2 * HOUR),
    P("ls-3", "Guaranteed", 9 * HOUR, 2 * HOUR, num_gpu=2),
]


@pytest.mark.parametrize("strategy", list(Strategy), ids=[s.value for s in Strategy])
def test_bins_add_up_to_the_replays_totals(strategy):
    jobs, nodes = parse_pods(pods_frame(TRACE)), parse_nodes(nodes_frame([2]))
    profiles, planner = parse_profiles(BURSTY), planner_for(Policy())
    settings = SimSettings(strategy=strategy)

    record = record_run(jobs, nodes, profiles, settings, planner, bins=37)
    plain = simulate(jobs, nodes, profiles, settings, planner=planner).to_json()

    assert record.result == plain  # the same replay
    hours = record.bin_seconds / HOUR
    assert len(record.allocated_gpus) == len(record.busy_gpus) == 37
    assert sum(record.allocated_gpus) * hours == pytest.approx(
        plain["gpu_hours_allocated"], abs=0.01
    )
    assert sum(record.busy_gpus) * hours == pytest.approx(plain["gpu_hours_busy"], abs=0.01)
    assert max(record.allocated_gpus) <= 2.0 + 1e-9
    pairs = zip(record.allocated_gpus, record.busy_gpus, strict=True)
    assert all(0.0 <= busy <= held + 1e-9 for held, busy in pairs)
    assert sum(record.preemptions) == plain["preemptions"]
    assert sum(record.wrongful) == plain["wrongful_preemptions"]
    assert sum(len(w) for w in record.waits.values()) == len(TRACE)
    assert record.gpus == 2


def test_the_culler_preempts_on_this_trace():
    """The test above would pass vacuously on preemptions if nothing were ever preempted."""
    jobs, nodes = parse_pods(pods_frame(TRACE)), parse_nodes(nodes_frame([2]))
    settings = SimSettings(strategy=Strategy.THRESHOLD)

    record = record_run(jobs, nodes, parse_profiles(BURSTY), settings, planner_for(Policy()))

    assert sum(record.preemptions) > 0


def _memory_of_pod_a(gib: float, samples: int) -> pd.DataFrame:
    return pd.DataFrame(
        {
            "timestamp_anon": [1.6e9 + STEP * i for i in range(samples)],
            "value": gib * 2**30,
            "container_ip": "pod-a",
        }
    )


PAIR = [P("ls-1", "LS", 0, 4 * HOUR), P("ls-2", "LS", 0, 4 * HOUR)]


@pytest.mark.parametrize(
    ("strategy", "pool_share", "pods"),
    [
        (Strategy.ALLOCATION, 0.0, TRACE),  # busy victims resumed: each start loads first
        (Strategy.TIMESLICE, 1.0, PAIR),  # 10 + 10 GiB on a T4: ls-2 restarts until it fails
    ],
    ids=["resumes", "oom-restarts-to-failure"],
)
def test_bins_add_up_through_cold_starts_restarts_and_failures(strategy, pool_share, pods):
    """A pod holds its GPU through its back-off and its model load, making no progress there: the
    bins count that time allocated and none of it busy, as the replay's totals do."""
    jobs, nodes = parse_pods(pods_frame(pods)), parse_nodes(nodes_frame([1, 1]))
    profiles, planner = parse_profiles(WORKING_4_OF_5), planner_for(Policy())
    memory = parse_memory(_memory_of_pod_a(10.0, len(WORKING_4_OF_5)), profiles, 10.0)
    # loads long enough that counting them busy would show at the totals' 0.01 GPU-h
    settings = SimSettings(strategy, pool_share=pool_share, cold_starts=ColdStarts((900.0, 1800.0)))

    record = record_run(jobs, nodes, profiles, settings, planner, bins=37, memory=memory)
    plain = simulate(jobs, nodes, profiles, settings, planner=planner, memory=memory).to_json()

    assert record.result == plain
    assert plain["preemptions"] + plain["failed_jobs"] > 0  # something started again, or failed
    hours = record.bin_seconds / HOUR
    assert sum(record.allocated_gpus) * hours == pytest.approx(
        plain["gpu_hours_allocated"], abs=0.01
    )
    assert sum(record.busy_gpus) * hours == pytest.approx(plain["gpu_hours_busy"], abs=0.01)
    assert sum(record.oom_kills) == plain["oom_kills"]
