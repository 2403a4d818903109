"""The replay shows the planner its pods' busy and co-busy time, as the controller reads them
hourly (`sim_pool.busy`, `sim_sharing.contentionlog`), and the guaranteed pods on time-sliced
nodes; so `forecast` lowers a node whose guaranteed pods wait for each other, as the controller
would (`plan.contend`)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace

import pandas as pd
from simworld import HOUR, STEP, P, nodes_frame, pods_frame, profile_frame

from reclaimer.decisions import ActionKind, Plan, Reason
from reclaimer.model import Forecast, Snapshot
from reclaimer.policy.settings import Policy, TimeSlicing
from reclaimer.simulate.jobs import Replay
from reclaimer.simulate.planning import planner_for
from reclaimer.simulate.replay import run_replay
from reclaimer.simulate.settings import SimSettings
from reclaimer.simulate.sharing.memory import parse_memory
from reclaimer.simulate.strategies import Strategy
from reclaimer.simulate.trace import parse_nodes, parse_pods, parse_profiles

PROFILE = profile_frame([20.0] * 240)  # busy at every sample
# node-0: one T4, the pool (2 replicas); node-1: two T4s, kept out of the pool (the largest)
PODS = [P("ls-a", "LS", 0.0, 3 * HOUR), P("ls-b", "LS", 60.0, 3 * HOUR)]


def _memory() -> pd.DataFrame:
    return pd.DataFrame(
        {
            "timestamp_anon": [1.6e9 + STEP * i for i in range(240)],
            "value": [2 * 2**30] * 240,  # 2 GiB each: they fit together
            "container_ip": "pod-a",
        }
    )


def _replay(policy: Policy) -> tuple[Replay, list[Snapshot], list[Plan]]:
    ctl = planner_for(policy)
    shown: list[Snapshot] = []
    seen: list[Plan] = []

    def observed(snapshot: Snapshot, forecasts: Mapping[str, Forecast], now: float) -> Plan:
        shown.append(snapshot)
        seen.append(ctl.plan_reshapes(snapshot, forecasts, now))
        return seen[-1]

    profiles = parse_profiles(PROFILE)
    replay = run_replay(
        parse_pods(pods_frame(PODS)),
        parse_nodes(nodes_frame([1, 2])),
        profiles,
        replace(
            SimSettings(Strategy.FORECAST), pool_share=1.0, replicas=2, forecast_start_whole=False
        ),
        planner=replace(ctl, plan_reshapes=observed),
        memory=parse_memory(_memory(), profiles, 2.0),
    )
    return replay, shown, seen


def _reshapes(seen: list[Plan]) -> set[tuple[str, int | None, int | None, Reason]]:
    return {
        (a.target, a.from_replicas, a.to_replicas, a.reason)
        for p in seen
        for a in p.actions
        if a.kind is ActionKind.RESHAPE
    }


def test_guaranteed_pods_busy_together_lower_their_node() -> None:
    replay, shown, seen = _replay(Policy())
    assert _reshapes(seen) == {("node-0", 2, 1, Reason.PODS_CONTEND)}
    assert replay.cluster.replicas[0] == 1  # relabelled: the node offers whole GPUs now
    hour = next(s for s in shown if s.taken_at == HOUR)  # the hour's first cycle reads it
    assert hour.contention is not None
    read = hour.contention.pods
    assert read["ls/ls-a"].present == HOUR and read["ls/ls-b"].present == HOUR - 60.0
    for pod in ("ls/ls-a", "ls/ls-b"):
        assert read[pod].busy == read[pod].present  # busy at every sample
    # the pricer's co-busy time: both busy from ls-b's start on (20% each: neither slowed)
    assert read["ls/ls-a"].cobusy == read["ls/ls-b"].cobusy == HOUR - 60.0
    assert {p.key for p in hour.pods} == {"ls/ls-a", "ls/ls-b"}  # guaranteed, on node-0
    assert {p.node for p in hour.pods} == {"node-0"}
    lowered = next(a for p in seen for a in p.actions if a.kind is ActionKind.RESHAPE)
    assert "busy beside a busy neighbour 99% of their 1h59m busy over 1d" in (
        lowered.evidence.detail
    )  # (3540 + 3540) / (3600 + 3540) co-busy


def test_with_the_rule_off_they_keep_sharing() -> None:
    off = Policy(time_slicing=TimeSlicing(max_cobusy_share=1.0))
    replay, _, seen = _replay(off)
    assert not any(r[3] is Reason.PODS_CONTEND for r in _reshapes(seen))
    assert replay.cluster.replicas[0] == 2
