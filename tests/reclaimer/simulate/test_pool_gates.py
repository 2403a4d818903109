"""The planner's sharing decisions in the replay: the memory-headroom gate on a raise, contention
relief, and the load history the raise gate reads (`sim_pool.timeslice.pool_readings`,
`sim_pool.reshaping`, `sim_sharing.loadlog`)."""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import replace

import pandas as pd
from simworld import HOUR, IDLE, STEP, P, nodes_frame, pods_frame, profile_frame

from reclaimer.decisions import ActionKind, Plan, Reason
from reclaimer.model import Forecast, GpuStats, Snapshot
from reclaimer.policy.settings import Policy
from reclaimer.simulate.jobs import Event, EventKind
from reclaimer.simulate.planning import planner_for
from reclaimer.simulate.replay import run_replay
from reclaimer.simulate.settings import SimSettings
from reclaimer.simulate.sharing.loadlog import LoadLog
from reclaimer.simulate.sharing.memory import parse_memory
from reclaimer.simulate.strategies import PlanFn, ReplayPlanner, Strategy
from reclaimer.simulate.trace import parse_nodes, parse_pods, parse_profiles

BUSY = profile_frame([100.0] * 240)


def _memory(gib: float) -> pd.DataFrame:
    return pd.DataFrame(
        {
            "timestamp_anon": [1.6e9 + STEP * i for i in range(240)],
            "value": [gib * 2**30] * 240,
            "container_ip": "pod-a",
        }
    )


def _observe(plan: PlanFn, seen: list[tuple[float, Plan]]) -> PlanFn:
    def observed(snapshot: Snapshot, forecasts: Mapping[str, Forecast], now: float) -> Plan:
        seen.append((now, plan(snapshot, forecasts, now)))
        return seen[-1][1]

    return observed


def _run(
    pods: list[P], gpus: list[int], profile: pd.DataFrame, gib: float, ctl: ReplayPlanner
) -> list[tuple[EventKind, float, str]]:
    """The replay's events as (kind, time, job key)."""
    profiles = parse_profiles(profile)
    events: list[Event] = []
    replay = run_replay(
        parse_pods(pods_frame(pods)),
        parse_nodes(nodes_frame(gpus)),
        profiles,
        replace(
            SimSettings(Strategy.FORECAST), pool_share=1.0, replicas=2, forecast_start_whole=False
        ),
        planner=ctl,
        memory=parse_memory(_memory(gib), profiles, gib),
        on_event=events.append,
    )
    return [(e.kind, e.at, replay.keys[e.job]) for e in events]


def _gate_skips(gib: float) -> list[tuple[float, str, str]]:
    """Twelve idle one-GPU jobs of `gib` GiB, 50 minutes each, one every 25 minutes, on two
    16 GiB T4s at 2 replicas (one pod per GPU): what the reshape plan says of node-0, as
    (time, reason, detail)."""
    ctl = planner_for(Policy())
    seen: list[tuple[float, Plan]] = []
    pods = [P(f"ls-{k}", "LS", k * 25 * 60.0, 50 * 60.0) for k in range(12)]
    _run(pods, [1, 1], IDLE, gib, replace(ctl, plan_reshapes=_observe(ctl.plan_reshapes, seen)))
    assert seen and not any(p.actions for _, p in seen)
    return [(t, s.reason, s.detail) for t, p in seen for s in p.skipped if s.target == "node-0"]


def test_a_raise_waits_for_enough_pods_measured_then_budgets_by_their_peaks():
    """The pods held 8 GiB: until ten pods are measured the raise is refused for too few;
    then each pod may come to hold 8 GiB: the GPU's pod and one more would pass 90% of 16 GiB
    (the memory scaled by the replicas alone, 8 x 3 / 2 = 12 GiB, passes the fill rule)."""
    skips = _gate_skips(8.0)  # two pods on one GPU fill it: no raise wanted (NoChangeNeeded)
    assert {r for _, r, _ in skips} == {Reason.NO_MEMORY_HEADROOM, Reason.NO_CHANGE}
    gated = [d for _, r, d in skips if r is Reason.NO_MEMORY_HEADROOM]
    assert "only 1 pod(s) measured over the last 7d" in gated[0]  # the first hour: one running
    budgeted = [d for d in gated if "each pod may come to hold 8.0 GiB (the pods' 99%" in d]
    assert budgeted and all("room for 1 pod(s)" in d for d in budgeted)  # even an empty GPU
    assert any("node-0/gpu0 has 1 pod(s) budgeted 8.0 GiB (8.0 used)" in d for d in budgeted)


def test_small_peaks_pass_the_memory_gate():
    """The same jobs at 2 GiB: once enough pods are measured the memory gate lets the raise
    on, to the load outlook (which has too little history in a day's replay)."""
    reasons = [r for _, r, _ in _gate_skips(2.0)]
    assert reasons[0] is Reason.NO_MEMORY_HEADROOM
    assert Reason.NO_LOAD_HISTORY in reasons


def test_a_busy_be_job_beside_a_busy_guaranteed_one_is_stopped_and_stays_off_its_gpu():
    """Both busy on the pool's one GPU (node-0, 2 replicas; node-1 is held whole by a 2-GPU
    job): contention relief stops the BE job once past its minimum runtime, never the
    guaranteed one, and the BE job comes back only when the guaranteed one is done."""
    pods = [
        P("ls-big", "LS", 0.0, 6 * HOUR, num_gpu=2),  # multi-GPU: node-1, off the pool
        P("ls-1", "LS", 0.0, 2 * HOUR),
        P("be-1", "BE", 0.0, 2 * HOUR),
    ]
    ctl = planner_for(Policy())
    stops: list[tuple[float, Plan]] = []
    resumes: list[tuple[float, Plan]] = []
    observed = replace(
        ctl,
        plan=_observe(ctl.plan, stops),
        plan_resumes=_observe(ctl.plan_resumes, resumes),
    )
    events = _run(pods, [1, 2], BUSY, 1.0, observed)

    acts = [(t, a) for t, p in stops for a in p.actions if a.kind is ActionKind.PREEMPT]
    assert [(a.target, a.reason) for _, a in acts] == [("be/be-1", Reason.CONTENTION_RELIEF)]
    stopped_at = acts[0][0]
    assert stopped_at >= Policy().min_runtime_seconds
    assert "time-sliced with guaranteed ls/ls-1" in acts[0][1].evidence.detail
    preempted = [(t, key) for kind, t, key in events if kind is EventKind.PREEMPTED]
    assert preempted == [(stopped_at, "be/be-1")]  # never a guaranteed job
    finished = {key: t for kind, t, key in events if kind is EventKind.FINISHED}
    resumed = [t for kind, t, key in events if kind is EventKind.RESUMED]
    held = {
        s.reason
        for t, p in resumes
        for s in p.skipped
        if s.target == "be/be-1" and t < finished["ls/ls-1"]
    }
    assert Reason.CONTENTION_WOULD_RETURN in held
    assert resumed and resumed[0] >= finished["ls/ls-1"]  # back only once ls-1 is done
    assert "be/be-1" in finished


def test_the_load_history_is_the_controllers_hourly_grid_of_the_replays_samples():
    log = LoadLog()
    for t in (0.0, 1800.0, 3600.0, 5400.0):
        log.record({0: (GpuStats(t / 3600.0 / 2, 0.0), GpuStats(0.0, 0.0))}, t)
    assert log.history(1, 7200.0) is None  # never sampled
    history = log.history(0, 7300.0)
    assert history is not None and history.step == 3600.0
    assert history.end == 7200.0  # whole hours, the last at or before now
    assert len(history.values) == 15 * 24  # the controller reads 15 days
    assert all(math.isnan(v) for v in history.values[:-2])  # before the replay began
    # hour 0: samples 0 and 0.125 (mean of the GPUs); hour 1: 0.25 and 0.375
    assert list(history.values[-2:]) == [0.0625, 0.3125]
