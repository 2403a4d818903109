"""The replay's pool under the memory budget's cap (`plan.budget`), through the controller's own
`plan()`: once the week's peaks of 10 pods are read, a node whose GPU cannot hold two pods at
the budget is lowered to 1 replica before a second pod lands there, so none is OOM-killed and
no Job fails. Before the 10th pod is measured the operator's replicas stand, and a second pod
placed then crash-loops and fails as it would without the cap."""

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
GIB_HELD = 10.0  # every job's GPU memory, all along: one fits a 16 GiB T4, two do not
LATE = 900.0  # ls-b arrives after three control cycles (300, 600, 900 s)


def _pods(measured: int) -> list[P]:
    """ls-a on the pool's one T4 from the start, `measured` 2-GPU jobs beside it on node-1
    (multi-GPU pods never run on the pool), and ls-b, a one-GPU pod that arrives late."""
    wide = [P(f"w{k}", "LS", 0.0, 2 * HOUR, num_gpu=2) for k in range(measured)]
    return [P("ls-a", "LS", 0.0, 2 * HOUR), *wide, P("ls-b", "LS", LATE, HOUR)]


def _memory() -> pd.DataFrame:
    return pd.DataFrame(
        {
            "timestamp_anon": [1.6e9 + STEP * i for i in range(240)],
            "value": [GIB_HELD * 2**30] * 240,
            "container_ip": "pod-a",
        }
    )


def _replay(measured: int, seen: list[Plan], whole: bool = False) -> tuple[Replay, list[Event]]:
    """node-0: one T4, the pool (2 replicas, or 1 started `whole`); node-1: twenty T4s kept
    whole for the 2-GPU pods."""
    ctl = planner_for(Policy())

    def observed(snapshot: Snapshot, forecasts: Mapping[str, Forecast], now: float) -> Plan:
        seen.append(ctl.plan_reshapes(snapshot, forecasts, now))
        return seen[-1]

    profiles = parse_profiles(PROFILE)
    events: list[Event] = []
    replay = run_replay(
        parse_pods(pods_frame(_pods(measured))),
        parse_nodes(nodes_frame([1, 20])),
        profiles,
        replace(
            SimSettings(Strategy.FORECAST), pool_share=1.0, replicas=2, forecast_start_whole=whole
        ),
        planner=replace(ctl, plan_reshapes=observed),
        memory=parse_memory(_memory(), profiles, GIB_HELD),
        on_event=events.append,
    )
    return replay, events


def _of(replay: Replay, events: list[Event], kind: EventKind) -> list[Event]:
    return [e for e in events if e.kind is kind]


def _started(replay: Replay, events: list[Event], pod: str) -> Event:
    (start,) = [e for e in _of(replay, events, EventKind.STARTED) if replay.keys[e.job] == pod]
    return start


def test_the_node_is_lowered_before_a_second_pod_lands_and_nothing_crashes() -> None:
    """ls-a and nine 2-GPU jobs make 10 pods measured at 10 GiB by the first cycle's read:
    the budget (10 GiB a slot) fits one pod on a 16 GiB T4, so node-0 goes 2 -> 1 (key at
    300 s, relabel at 600 s) and ls-b, at 900 s, takes a whole GPU on node-1."""
    seen: list[Plan] = []
    replay, events = _replay(9, seen)
    lowered = [a for p in seen for a in p.actions if a.kind is ActionKind.RESHAPE]
    assert {(a.target, a.from_replicas, a.to_replicas, a.reason) for a in lowered} == {
        ("node-0", 2, 1, Reason.MEMORY_BUDGET_EXCEEDED)
    }
    assert "each pod may come to hold 10.0 GiB" in lowered[0].evidence.detail
    assert "of 10 pods over 7d" in lowered[0].evidence.detail
    assert (int(replay.cluster.replicas[0]), replay.reshape_reasons[0]) == (
        1,
        "MemoryBudgetExceeded",
    )
    assert replay.last_reshape[0] < LATE  # whole before ls-b arrives
    start = _started(replay, events, "ls/ls-b")
    assert start.placement is not None and (start.placement.node, start.placement.replica) == (
        1,
        False,
    )
    assert not _of(replay, events, EventKind.OOM_KILLED)
    assert not _of(replay, events, EventKind.FAILED)
    finished = {replay.keys[e.job] for e in _of(replay, events, EventKind.FINISHED)}
    assert {"ls/ls-a", "ls/ls-b"} <= finished


def test_before_ten_pods_are_measured_the_operators_replicas_stand() -> None:
    """The same trace with one 2-GPU job fewer: 9 pods measured, the budget is unknown, node-0
    keeps its 2 replicas (and each cycle's plan says why) and ls-b lands beside ls-a, where two
    10 GiB pods pass the T4's 16 GiB: it crash-loops in place and its Job fails before a cycle
    can save it."""
    seen: list[Plan] = []
    replay, events = _replay(8, seen)
    before = [s for p in seen if p.created_at < LATE for s in p.skipped if s.target == "node-0"]
    assert before and {s.reason for s in before} == {Reason.NO_CHANGE}
    says = "memory budget unknown, the replicas stand as set: only 9 pod(s) measured"
    assert all(says in s.detail for s in before), before
    assert not [a for p in seen if p.created_at < LATE for a in p.actions]
    start = _started(replay, events, "ls/ls-b")
    assert start.placement is not None and (start.placement.node, start.placement.replica) == (
        0,
        True,
    )
    kills = {replay.keys[e.job] for e in _of(replay, events, EventKind.OOM_KILLED)}
    assert kills == {"ls/ls-b"}
    assert {replay.keys[e.job] for e in _of(replay, events, EventKind.FAILED)} == {"ls/ls-b"}


def test_a_pool_started_whole_puts_no_two_pods_together_before_the_budget_is_known() -> None:
    """The trace that crash-loops ls-b above (9 pods measured, the budget unknown), with the
    pool started whole: node-0 offers its one GPU once, so ls-b takes a whole GPU on node-1;
    the planner never raises node-0 (pods that do not fit share nothing), and nothing crashes."""
    seen: list[Plan] = []
    replay, events = _replay(8, seen, whole=True)
    start = _started(replay, events, "ls/ls-b")
    assert start.placement is not None and (start.placement.node, start.placement.replica) == (
        1,
        False,
    )
    assert not [a for p in seen for a in p.actions if a.kind is ActionKind.RESHAPE]
    said = {s.reason for p in seen for s in p.skipped if s.target == "node-0"}
    assert said and said <= {Reason.NO_CHANGE, Reason.NO_MEMORY_HEADROOM, Reason.NO_LOAD_HISTORY}
    assert int(replay.cluster.replicas[0]) == 1 and bool(replay.cluster.sliced[0])
    assert not _of(replay, events, EventKind.OOM_KILLED)
    assert not _of(replay, events, EventKind.FAILED)
