"""Restarts as Kubernetes does them: in place after the kubelet's back-off, until the Job's
backoffLimit fails the job, each restart and resume paying a cold start (`sim_sharing.restarts`)."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from simworld import HOUR, STEP, P, nodes_frame, pods_frame

from reclaimer.policy.settings import Policy
from reclaimer.simulate.jobs import Event, EventKind
from reclaimer.simulate.planning import planner_for
from reclaimer.simulate.replay import run_replay, simulate
from reclaimer.simulate.results import SimResult
from reclaimer.simulate.settings import SimSettings
from reclaimer.simulate.sharing.memory import parse_memory
from reclaimer.simulate.sharing.restarts import (
    ColdStarts,
    CrashLoop,
    crashed,
    fails,
    parse_cold_starts,
    read_cold_starts,
)
from reclaimer.simulate.strategies import Strategy
from reclaimer.simulate.trace import TraceError, parse_nodes, parse_pods, parse_profiles
from reclaimer.traces.catalog import Role

SAMPLES = 240  # four hours a minute apart: no profile wraps in these replays


# -- the kubelet's back-off and the Job controller's count, as rules --------------------------
def _waits(crash_times: list[float]) -> list[float]:
    loop, waits = CrashLoop(), []
    for at in crash_times:
        wait, loop = crashed(loop, at)
        waits.append(wait)
    return waits


@pytest.mark.parametrize(
    ("crash_times", "waits"),
    [
        ([0.0], [0.0]),
        # each crash the moment its container is back: 0, 10 s, then doubling to the 300 s cap
        ([0, 0, 10, 30, 70, 150, 310, 610, 910], [0, 10, 20, 40, 80, 160, 300, 300, 300]),
        # ran more than 10 minutes since its last restart: the back-off starts over
        ([0, 0, 10 + 601, 10 + 601], [0, 10, 0, 10]),
        # exactly 10 minutes is not more than twice the cap: it goes on doubling
        ([0, 0, 10 + 600], [0, 10, 20]),
    ],
    ids=["first-at-once", "doubling-to-the-cap", "reset-after-10-minutes", "600-s-is-no-reset"],
)
def test_the_kubelet_waits_its_back_off_before_each_restart(crash_times, waits):
    assert _waits([float(t) for t in crash_times]) == waits


@pytest.mark.parametrize(
    ("restarts", "limit", "failed"),
    [(5, 6, False), (6, 6, True), (1, 1, True), (0, 0, False), (1, 0, True)],
)
def test_the_job_fails_when_its_pods_restarts_reach_the_backoff_limit(restarts, limit, failed):
    assert fails(restarts, limit) is failed


# -- replays: two pods on one time-sliced T4 (16 GiB), each replaying its own memory ----------
def _own_profiles(memory_gib: dict[str, list[float]]) -> pd.DataFrame:
    frames = [
        pd.DataFrame(
            {
                "value": 0.0,  # idle: a kill loses no work, so progress picks up where it died
                "timestamp_anon": [1.6e9 + STEP * i for i in range(SAMPLES)],
                "container_ip": pod,
                "bytes": [g * 2**30 for g in gib],
            }
        )
        for pod, gib in memory_gib.items()
    ]
    return pd.concat(frames, ignore_index=True)


def _minutes(*spans: tuple[int, float]) -> list[float]:
    """GiB per minute: (up to minute, GiB) spans, the last running to the end."""
    out: list[float] = []
    for until, gib in spans:
        out += [gib] * (min(until, SAMPLES) - len(out))
    return out


def _replay(
    pods: list[P],
    memory_gib: dict[str, list[float]],
    *,
    limit: int = 6,
    cold: ColdStarts | None = None,
) -> tuple[SimResult, list[Event]]:
    frame = _own_profiles(memory_gib)
    profiles = parse_profiles(frame[["value", "timestamp_anon", "container_ip"]])
    memory = frame.rename(columns={"value": "util", "bytes": "value"})
    top = max(max(g) for g in memory_gib.values())
    settings = replace(
        SimSettings(Strategy.TIMESLICE),
        pool_share=1.0,
        cold_starts=cold or ColdStarts(),
        backoff_limit=limit,
    )
    events: list[Event] = []
    result = simulate(
        parse_pods(pods_frame(pods)),
        parse_nodes(nodes_frame([1, 1])),  # node-0 is the pool (2 replicas), node-1 stays whole
        profiles,
        settings,
        planner=planner_for(Policy()),
        memory=parse_memory(memory, profiles, top),
        on_event=events.append,
    )
    return result, events


def _at(events: list[Event], kind: EventKind, job: int) -> list[float]:
    return [e.at for e in events if e.kind is kind and e.job == job]


PAIR = [P("pod-a", "LS", 0.0, 2 * HOUR), P("pod-g", "LS", 0.0, 2 * HOUR)]
A, G = 0, 1  # pod-a is placed first; pod-g, placed second, grows past the device


@pytest.mark.parametrize(
    ("limit", "cold", "kills", "restarts", "failed_at"),
    [
        (6, 0.0, [0, 0, 10, 30, 70, 150], [0, 10, 30, 70, 150], 150 + 160),
        (2, 0.0, [0, 0], [0], 10),
        (1, 0.0, [0], [], 0),
        (0, 0.0, [0], [], 0),
        # each restart loads 30 s before it runs (and dies) again
        (6, 30.0, [0, 30, 70, 120, 190, 300], [0, 40, 90, 160, 270], 300 + 160),
    ],
    ids=["limit-6", "limit-2", "limit-1", "limit-0", "limit-6-cold-start-30s"],
)
def test_an_oom_killed_pod_restarts_in_place_until_its_backoff_limit_fails_it(
    limit, cold, kills, restarts, failed_at
):
    memory = {"pod-a": [8.0] * SAMPLES, "pod-g": [10.0] * SAMPLES}  # 18 GiB: never fit together
    result, events = _replay(PAIR, memory, limit=limit, cold=ColdStarts((cold,) if cold else ()))
    (start,) = [e for e in events if e.kind is EventKind.STARTED and e.job == G]
    back = [e for e in events if e.kind is EventKind.RESTARTED]

    assert _at(events, EventKind.OOM_KILLED, G) == kills
    assert [e.at for e in back] == restarts
    assert all(e.job == G and e.cold_start == cold for e in back)
    # on the node, device and replica it was placed on, never rescheduled
    assert start.placement is not None and start.placement.replica
    assert all(e.placement == start.placement for e in back)
    assert EventKind.QUEUED not in [e.kind for e in events if e.job == G and e.at > 0]
    assert _at(events, EventKind.FAILED, G) == [failed_at]
    assert _at(events, EventKind.FINISHED, G) == []  # it left unfinished
    assert _at(events, EventKind.FINISHED, A) == [2 * HOUR]  # alone on the GPU after each kill
    assert (result.oom_kills, result.guaranteed_oom_kills) == (len(kills), len(kills))
    assert (result.failed_jobs, result.guaranteed_failed_jobs) == (1, 1)  # LS is guaranteed


def test_the_back_off_starts_over_once_the_container_ran_ten_minutes():
    """pod-g outgrows pod-a at minute 20 of its run and crash-loops until pod-a shrinks at its
    minute 21; it then runs 29 minutes and grows again at its minute 50, past what pod-a leaves.
    That crash finds the back-off expired: restarted at once, as a first crash."""
    memory = {
        "pod-a": _minutes((21, 8.0), (SAMPLES, 2.0)),
        "pod-g": _minutes((20, 4.0), (50, 10.0), (SAMPLES, 15.0)),
    }
    result, events = _replay(PAIR, memory)
    kills = _at(events, EventKind.OOM_KILLED, G)
    restarts = _at(events, EventKind.RESTARTED, G)

    # reprices fall on the 5-minute sharing grid and look one step ahead
    assert kills == [1200, 1200, 1210, 1230, 3000, 3000]
    assert restarts == [1200, 1210, 1230, 1270, 3000]
    assert restarts[4] - restarts[3] > 600  # it ran 10 minutes and more before that crash
    waits = [r - k for k, r in zip(kills, restarts, strict=False)]
    assert waits == [0, 10, 20, 40, 0]  # 80 s had the back-off gone on doubling
    # the pod's restarts still add up: its sixth crash, 10 s later, fails the job
    assert _at(events, EventKind.FAILED, G) == [3000 + 10]
    assert result.guaranteed_failed_jobs == 1


# -- cold starts ---------------------------------------------------------------------------
STARVED = [
    P("be-1", "BE", 0.0, 20 * HOUR),
    P("be-2", "BE", 0.0, 20 * HOUR),
    P("ls-1", "LS", 3 * HOUR, 1 * HOUR),
    P("ls-late", "LS", 40 * HOUR, 1 * HOUR),
]
LOADS = ColdStarts(tuple(float(s) for s in range(1, 101)))  # 1 s to 100 s


def _victim_replay(strategy: Strategy, cold: ColdStarts, seed: int = 0) -> list[Event]:
    idle = pd.DataFrame(
        {
            "value": 0.0,
            "timestamp_anon": [1.6e9 + STEP * i for i in range(SAMPLES)],
            "container_ip": "pod-x",
        }
    )
    settings = SimSettings(strategy, seed=seed, cold_starts=cold)
    events: list[Event] = []
    run_replay(
        parse_pods(pods_frame(STARVED)),
        parse_nodes(nodes_frame([1, 1])),
        parse_profiles(idle),
        settings,
        planner=planner_for(Policy()),
        on_event=events.append,
    )
    return events


@pytest.mark.parametrize(
    "strategy", [Strategy.FORECAST, Strategy.THRESHOLD], ids=["resumed", "culled-and-requeued"]
)
def test_a_job_starting_again_pays_a_cold_start_and_its_first_start_none(strategy):
    events = _victim_replay(strategy, LOADS)
    cut = next(e for e in events if e.kind is EventKind.PREEMPTED)
    starts = [e for e in events if e.kind is EventKind.STARTED and e.job == cut.job]
    done = next(e for e in events if e.kind is EventKind.FINISHED and e.job == cut.job)

    assert len(starts) >= 2
    assert starts[0].cold_start == 0.0  # the trace's run time holds its first load
    assert [e.cold_start for e in starts[1:]] == [
        LOADS.draw(0, cut.job, n) for n in range(len(starts) - 1)
    ]
    assert all(e.cold_start > 0 for e in starts[1:])
    # it holds its GPU through the load and makes progress only after it
    last = starts[-1]
    assert done.at == pytest.approx(last.at + last.cold_start + 20 * HOUR - last.progress)


def test_cold_starts_are_drawn_per_seed_job_and_load_and_reproduced():
    def drawn(seed: int) -> list[tuple[int, float]]:
        events = _victim_replay(Strategy.THRESHOLD, LOADS, seed)
        return [(e.job, e.cold_start) for e in events if e.kind is EventKind.STARTED]

    def expected(starts: list[tuple[int, float]], seed: int) -> list[tuple[int, float]]:
        """Each job's first start loads nothing, its n-th start again the n-th draw."""
        count: dict[int, int] = {}
        out = []
        for job, _ in starts:
            n = count[job] = count.get(job, -1) + 1
            out.append((job, LOADS.draw(seed, job, n - 1) if n else 0.0))
        return out

    zero, one = drawn(0), drawn(1)
    assert sum(c > 0 for _, c in zero) >= 2  # the culler restarts its victims again and again
    assert zero == drawn(0) == expected(zero, 0)
    assert one == expected(one, 1)
    assert [c for _, c in zero] != [c for _, c in one]  # the seed moves the draws
    assert ColdStarts().draw(0, 0, 0) == 0.0  # no loads given: no cold start


# -- the load times file -------------------------------------------------------------------
def test_load_times_are_read_in_milliseconds():
    frame = pd.DataFrame(
        {"timestamp_anon": [1.0, 2.0], "value": [22718.0, 1329.0], "container_ip": ["a", "b"]}
    )
    assert parse_cold_starts(frame).seconds == (22.718, 1.329)


@pytest.mark.parametrize(
    ("frame", "message"),
    [
        (pd.DataFrame({"value": [1.0]}), "missing column(s) timestamp_anon, container_ip"),
        (
            pd.DataFrame({"timestamp_anon": [1.0], "value": [-5.0], "container_ip": ["a"]}),
            "milliseconds, each >= 0",
        ),
    ],
    ids=["columns", "negative"],
)
def test_a_bad_load_times_file_is_a_clear_error(frame, message):
    with pytest.raises(TraceError, match=message.replace("(", r"\(").replace(")", r"\)")):
        parse_cold_starts(frame)


def test_the_shared_load_times_are_gentd26s_base_model_loads(shared_data: Path):
    loads = np.array(read_cold_starts(shared_data / Role.COLD_START.value).seconds)
    assert len(loads) == 7531
    assert np.median(loads) == pytest.approx(22.7, abs=0.05)
    assert np.percentile(loads, 90) == pytest.approx(42.0, abs=0.05)
