"""The replay's cost of a preemption, checked on a slice of the shared trace (docs/backtest.md).

A victim loses the work it did since its last checkpoint (or its start): its time at or above
the idle threshold, read here sample by sample from its own utilization profile. Its idle time
is not redone: it goes on from where it stood, less the work it lost.
"""

from __future__ import annotations

import math
from itertools import pairwise
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from reclaimer.policy.settings import Policy
from reclaimer.simulate.jobs import Event, EventKind
from reclaimer.simulate.planning import planner_for
from reclaimer.simulate.replay import simulate
from reclaimer.simulate.settings import SimSettings
from reclaimer.simulate.sharing.usage import Usage, assign_usage
from reclaimer.simulate.strategies import Strategy
from reclaimer.simulate.trace import parse_pods, read_nodes, read_profiles

SEED = 0


def _work_by_sample(usage: Usage, job: int, progress: float, threshold: float) -> float:
    """Seconds at or above `threshold` in the job's profile from progress 0 to `progress`."""
    count = math.ceil(progress / usage.step)
    starts = np.arange(count) * usage.step
    level = usage.utilization(np.full(count, job), starts)
    seconds = np.minimum(usage.step, progress - starts)
    return float(seconds[level >= threshold].sum())


@pytest.fixture(scope="module")
def replayed(shared_data: Path) -> tuple[list[Event], Usage, Policy, np.ndarray]:
    """Two busy days of alibaba-openb on 10 GPUs under the default policy, every event kept."""
    pods = pd.read_csv(shared_data / "alibaba-openb" / "openb_pod_list_default.csv")
    days = pods[(pods.creation_time >= 146 * 86400) & (pods.creation_time < 148 * 86400)]
    jobs = parse_pods(days)
    nodes = read_nodes(shared_data / "alibaba-openb" / "openb_node_list_gpu_node.csv", 0.002)
    profiles = read_profiles(shared_data / "alibaba-gentd26" / "pod_gpu_duty_cycle.csv.gz")
    policy = Policy()  # no checkpoints: a victim's work since its start is lost
    settings = SimSettings(strategy=Strategy.FORECAST, seed=SEED)
    events: list[Event] = []
    simulate(jobs, nodes, profiles, settings, planner=planner_for(policy), on_event=events.append)
    # the replay's own assignment of profiles (same seed, same assignment; by default each
    # starts at its job's arrival time of day)
    usage = assign_usage(
        profiles,
        len(jobs.names),
        SEED,
        settings.idle_window_seconds,
        policy.horizon_seconds,
        threshold=policy.threshold,
        arrival=jobs.arrival,
    )
    return events, usage, policy, jobs.runtime


def test_a_preempted_idle_job_redoes_its_work_but_not_its_idle_time(replayed):
    events, usage, policy, _ = replayed
    cuts = [e for e in events if e.kind is EventKind.PREEMPTED]

    assert cuts, "the slice no longer contends: pick one where the default policy preempts"
    for cut in cuts:
        expected = _work_by_sample(usage, cut.job, cut.progress, policy.threshold)
        assert cut.lost_seconds == pytest.approx(expected, abs=1e-6)
        assert cut.suspended  # held by the reclaimer until its plan resumes it
        resumed, started = [e for e in events if e.job == cut.job and e.at > cut.at][:2]
        assert (resumed.kind, started.kind) == (EventKind.RESUMED, EventKind.STARTED)
        # it goes on from where it stood, less the work it lost
        assert started.progress == pytest.approx(cut.progress - cut.lost_seconds)
    # the victims were mostly idle: redoing all their time since start would cost far more
    ran = sum(c.progress for c in cuts)
    assert sum(c.lost_seconds for c in cuts) < 0.5 * ran


def test_a_resumed_victim_runs_exactly_its_trace_run_time_plus_the_work_it_lost(replayed):
    events, _, _, runtime = replayed
    victims = {e.job for e in events if e.kind is EventKind.PREEMPTED}
    finished = {e.job for e in events if e.kind is EventKind.FINISHED}

    assert victims & finished
    for job in victims & finished:
        mine = [e for e in events if e.job == job]
        ran = sum(
            stop.at - start.at for start, stop in pairwise(mine) if start.kind is EventKind.STARTED
        )
        lost = sum(e.lost_seconds for e in mine if e.kind is EventKind.PREEMPTED)
        assert ran == pytest.approx(runtime[job] + lost, abs=1e-6)
