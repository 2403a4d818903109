"""The replay shows the planner its own OOM kills as the controller sees crashes
(`sim_pool.reshaping.pool_crashes`), so `forecast` lowers a node whose pods do not fit, down to 1
replica, exactly as the controller would; static time-slicing keeps killing. The pod that first
crashes fails either way: the kubelet restarts it in place faster than a cycle comes round."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace

import pandas as pd
from simworld import HOUR, STEP, P, nodes_frame, pods_frame, profile_frame

from reclaimer.decisions import ActionKind, Plan, Reason
from reclaimer.model import Forecast, Snapshot
from reclaimer.policy.settings import Policy
from reclaimer.simulate.jobs import Event, EventKind, Replay
from reclaimer.simulate.planning import planner_for
from reclaimer.simulate.replay import run_replay
from reclaimer.simulate.settings import SimSettings
from reclaimer.simulate.sharing.memory import parse_memory
from reclaimer.simulate.strategies import Strategy
from reclaimer.simulate.trace import parse_nodes, parse_pods, parse_profiles

PROFILE = profile_frame([20.0] * 240)
GIB_HELD = 10.0  # each job's GPU memory, all along: two of them pass a 16 GiB T4
# node-0: one T4, the pool (2 replicas); node-1: two T4s, kept out of the pool (the largest)
PODS = [
    P("ls-a", "LS", 0.0, 2 * HOUR),
    P("ls-b", "LS", 60.0, 2 * HOUR),
    P("ls-c", "LS", HOUR, 2 * HOUR),
]


def _memory() -> pd.DataFrame:
    return pd.DataFrame(
        {
            "timestamp_anon": [1.6e9 + STEP * i for i in range(240)],
            "value": [GIB_HELD * 2**30] * 240,
            "container_ip": "pod-a",
        }
    )


def _replay(strategy: Strategy, seen: list[Plan]) -> tuple[Replay, list[Event]]:
    ctl = planner_for(Policy())

    def observed(snapshot: Snapshot, forecasts: Mapping[str, Forecast], now: float) -> Plan:
        seen.append(ctl.plan_reshapes(snapshot, forecasts, now))
        return seen[-1]

    profiles = parse_profiles(PROFILE)
    events: list[Event] = []
    replay = run_replay(
        parse_pods(pods_frame(PODS)),
        parse_nodes(nodes_frame([1, 2])),
        profiles,
        replace(SimSettings(strategy), pool_share=1.0, replicas=2, forecast_start_whole=False),
        planner=replace(ctl, plan_reshapes=observed),
        memory=parse_memory(_memory(), profiles, GIB_HELD),
        on_event=events.append,
    )
    return replay, events


def _kills(replay: Replay, events: list[Event]) -> list[tuple[float, str]]:
    return [(e.at, replay.keys[e.job]) for e in events if e.kind is EventKind.OOM_KILLED]


def test_forecast_lowers_the_node_to_one_replica_after_its_pods_crash_and_kills_stop() -> None:
    seen: list[Plan] = []
    replay, events = _replay(Strategy.FORECAST, seen)
    kills = _kills(replay, events)
    assert kills and kills[0] == (60.0, "ls/ls-b")  # placed beside ls-a, it cannot allocate
    lowered = [a for p in seen for a in p.actions if a.kind is ActionKind.RESHAPE]
    assert {(a.target, a.from_replicas, a.to_replicas, a.reason) for a in lowered} == {
        ("node-0", 2, 1, Reason.PODS_CRASHED)
    }
    assert "ls/ls-b (main) Error exit 1" in lowered[0].evidence.detail
    relabelled = replay.last_reshape[0]  # the actuator's second step: the node offers 1 now
    assert (int(replay.cluster.replicas[0]), replay.reshape_reasons[0]) == (1, "SharedPodsCrashed")
    assert all(at < relabelled for at, _ in kills)  # no OOM kill once the node is whole
    # ls-b crash-looped in its pod (the kubelet restarts it in place) until its Job's
    # backoffLimit failed it, before any cycle could act; ls-c, arriving once the node is whole,
    # gets a GPU of its own
    assert _ended(replay, events, EventKind.FAILED) == {"ls/ls-b"}
    assert _ended(replay, events, EventKind.FINISHED) == {"ls/ls-a", "ls/ls-c"}


def _ended(replay: Replay, events: list[Event], kind: EventKind) -> set[str]:
    return {replay.keys[e.job] for e in events if e.kind is kind}


def test_static_time_slicing_keeps_killing_on_the_same_trace() -> None:
    """The contrast that makes the lowering the reason the kills stop: without it, ls-c is
    placed beside ls-a too, crash-loops and fails as ls-b did."""
    seen: list[Plan] = []
    forecast, forecast_events = _replay(Strategy.FORECAST, seen)
    relabelled = forecast.last_reshape[0]
    static, events = _replay(Strategy.TIMESLICE, [])
    later = [at for at, _ in _kills(static, events) if at > relabelled]
    assert later and int(static.cluster.replicas[0]) == 2
    assert len(_kills(static, events)) > len(_kills(forecast, forecast_events))
    assert _ended(static, events, EventKind.FAILED) == {"ls/ls-b", "ls/ls-c"}
