"""Cost-aware stops: a job is stopped for a waiting gang only where what it frees outweighs
what it risks, and the plan says both sides."""

from __future__ import annotations

from dataclasses import replace

import pytest
from planworld import HOUR, World, forecast, starved_world

from reclaimer.decisions import ActionKind, Plan, Reason
from reclaimer.plan.stop_cost import CostRule, busy_share, stop_cost
from reclaimer.policy.settings import Policy, load_policy

COST = load_policy("costAwareStops: true\ncoldStart: 1m\n")
RULE = CostRule(cold_start_seconds=60.0, floor=0.5)


def _world(confidence: float, *, age: float = 2 * HOUR, gang: int = 8) -> World:
    """`be/a` holds n1's 8 GPUs, forecast at `confidence` (the forecaster's own flag says idle
    only from 0.85, its default cut); `be/busy` holds n2; `ls/x` (`gang` GPUs) has waited 1 h."""
    world = (
        starved_world()
        .job("be/a", "be", {"n1": 8}, age=age)
        .job("be/busy", "be", {"n2": 8}, busy=True)
        .pend("ls/x", "ls", gang)
    )
    world.forecasts["be/a"] = forecast("be/a", idle=confidence >= 0.85, confidence=confidence)
    return world


def _stopped(plan: Plan) -> set[str]:
    return {a.target for a in plan.actions if a.kind is ActionKind.PREEMPT}


def _skip(plan: Plan, target: str) -> tuple[Reason, str]:
    (skip,) = [s for s in plan.skipped if s.target == target]
    return skip.reason, skip.detail


def test_both_sides_in_gpu_seconds():
    f = replace(forecast("j", idle=True, confidence=0.9), past_windows=10, past_idle_windows=8)

    cost = stop_cost(f, RULE, gpus_freed=2, gpus_held=4, work_lost_seconds=3600.0)

    assert busy_share(f) == pytest.approx(0.2)  # 2 of 10 past horizons were not idle
    assert cost.work_seconds == pytest.approx(720.0)  # 20% of the hour since the checkpoint
    assert cost.gain == pytest.approx(0.9 * 2 * 900.0)
    assert cost.risk == pytest.approx(0.1 * 4 * (720.0 + 60.0))
    assert cost.worth
    assert cost.text().startswith(
        "frees 2 GPUs for 15m of waiting demand; risks 12m of work and a 1m cold start"
    )


def test_no_past_horizon_counts_the_whole_run_as_work():
    assert busy_share(forecast("j", idle=True, confidence=0.9)) == 1.0


def test_a_job_below_min_confidence_is_stopped_when_it_risks_little():
    # ran 2 h with a 30 m checkpoint: nothing since the last one, only the cold start at risk
    checkpoints = replace(COST, checkpoint_interval_seconds=1800.0)
    plain = replace(Policy(), checkpoint_interval_seconds=1800.0)

    assert _stopped(_world(0.7).plan(checkpoints)) == {"be/a"}
    assert _skip(_world(0.7).plan(plain), "be/a")[0] is Reason.NOT_IDLE  # 0.70 < 0.85


def test_a_confident_job_with_hours_of_work_at_risk_is_left_standing():
    # 2 h of work, no checkpoint: 0.12 x 8 x (2 h + 1 m) outweighs 0.88 x 8 x 15 m
    plan = _world(0.88).plan(COST)

    assert _stopped(_world(0.88).plan(Policy())) == {"be/a"}  # 0.88 passes minConfidence
    assert _stopped(plan) == set()
    reason, detail = _skip(plan, "be/a")
    assert reason is Reason.STOP_NOT_WORTH
    assert "for ls/x: frees 8 GPUs for 15m of waiting demand; risks 2h of work" in detail
    assert _skip(plan, "ls/x")[0] is Reason.NO_FIT


def test_only_the_gpus_the_gang_asks_for_count_as_freed():
    # the same job at 0.97: worth it for 8 waiting GPUs, not for 1 (it would lose all 8's work)
    assert _stopped(_world(0.97).plan(COST)) == {"be/a"}
    one = _world(0.97, gang=1).plan(COST)
    assert _stopped(one) == set()
    assert "frees 1 GPU for 15m" in _skip(one, "be/a")[1]


def test_the_floor_bounds_the_rule():
    checkpoints = replace(COST, checkpoint_interval_seconds=1800.0)

    reason, detail = _skip(_world(0.45).plan(checkpoints), "be/a")

    assert reason is Reason.NOT_IDLE
    assert "below costAwareFloor 0.50" in detail


def test_the_stop_says_what_it_frees_and_risks():
    policy = replace(COST, checkpoint_interval_seconds=1800.0)

    (action,) = _world(0.9, age=2 * HOUR + 720.0).plan(policy).actions

    assert action.reason is Reason.IDLE_FOR_STARVED_QUEUE
    assert "frees 8 GPUs for 15m of waiting demand; risks 12m of work and a 1m cold start" in (
        action.evidence.detail
    )


def test_the_policy_keys_and_their_defaults():
    assert (Policy().cost_aware_stops, Policy().cold_start_seconds) == (False, 60.0)
    assert Policy().cost_aware_floor == 0.5
    got = load_policy("costAwareStops: true\ncoldStart: 2m\ncostAwareFloor: 0.6\n")
    assert (got.cost_aware_stops, got.cold_start_seconds, got.cost_aware_floor) == (
        True,
        120.0,
        0.6,
    )
