"""The controller's own `forecast()` and `plan()`, bound to a policy for the replay.

The replay calls exactly the functions the live controller calls. Only what a replay cannot
represent is adjusted, and each adjustment is here: preemption, resume and reshape are planned by
separate calls of the same `plan()` (the replay plans preemptions in two views, see
`sim_devices`, resumes in a third call that only resumes, in ticks that preempt nothing, and the
time-sliced pool's reshapes in a fourth that only reshapes, on the pool's nodes:
`sim_pool.reshaping`); and in the device view `maxGpusFreedPerCycle` is multiplied by
`SLOTS_PER_GPU` because that view shows the planner tenth-of-a-GPU slots (the node view for
multi-GPU pods counts whole devices, so there it applies as written). The forecaster reads the
policy's threshold and horizon, and the history it is given is capped at its own `lookback_seconds`.
`forecaster` names the method that answers (`reclaimer.forecast.forecaster.METHODS`; the
controller's default unless given), so a baseline can be judged by the same plans.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace

import pandas as pd

from reclaimer.decisions import Plan
from reclaimer.forecast.forecaster import DEFAULT_METHOD, forecast
from reclaimer.forecast.params import ForecastParams, for_policy
from reclaimer.model import Forecast, Snapshot
from reclaimer.plan.planner import may_resume, plan
from reclaimer.policy.settings import Actions, Policy
from reclaimer.simulate.strategies import SLOTS_PER_GPU, ReplayPlanner


def replay_policy(
    policy: Policy,
    slots_per_gpu: int = SLOTS_PER_GPU,
    *,
    resumes: bool = False,
    reshapes: bool = False,
) -> Policy:
    """The policy as the replay applies it in a view of `slots_per_gpu` slots per GPU.

    With `resumes`, the plan only resumes (if the policy allows it); with `reshapes`, it only
    reshapes; without either, it only preempts.
    """
    limits = replace(
        policy.limits,
        max_gpus_freed_per_cycle=policy.limits.max_gpus_freed_per_cycle * slots_per_gpu,
    )
    actions = Actions(
        preempt=policy.actions.preempt and not resumes and not reshapes,
        resume=policy.actions.resume and resumes,
        reshape=policy.actions.reshape and reshapes,
    )
    return replace(policy, limits=limits, actions=actions)


def planner_for(
    policy: Policy, params: ForecastParams | None = None, forecaster: str = DEFAULT_METHOD
) -> ReplayPlanner:
    """A `ReplayPlanner` running `forecast()` (by `forecaster`) and `plan()` under `policy`."""
    params = for_policy(policy, params)  # the controller's one conversion: minConfidence too
    applied = replay_policy(policy)
    in_devices = replay_policy(policy, 1)
    resuming = replay_policy(policy, resumes=True)
    reshaping = replay_policy(policy, reshapes=True)

    def run_forecast(history: pd.DataFrame, now: float) -> Mapping[str, Forecast]:
        return forecast(history, params, now, forecaster)

    def run_plan(snapshot: Snapshot, forecasts: Mapping[str, Forecast], now: float) -> Plan:
        return plan(snapshot, forecasts, applied, now)

    def run_plan_devices(snapshot: Snapshot, forecasts: Mapping[str, Forecast], now: float) -> Plan:
        return plan(snapshot, forecasts, in_devices, now)

    def run_plan_resumes(snapshot: Snapshot, forecasts: Mapping[str, Forecast], now: float) -> Plan:
        return plan(snapshot, forecasts, resuming, now)

    def resumes_possible(snapshot: Snapshot, now: float) -> bool:
        return may_resume(snapshot, resuming, now)

    def run_plan_reshapes(
        snapshot: Snapshot, forecasts: Mapping[str, Forecast], now: float
    ) -> Plan:
        return plan(snapshot, forecasts, reshaping, now)

    return ReplayPlanner(
        forecast=run_forecast,
        plan=run_plan,
        threshold=policy.threshold,
        horizon_seconds=policy.horizon_seconds,
        history_seconds=params.lookback_seconds,
        min_runtime_seconds=policy.min_runtime_seconds,
        min_history_seconds=params.min_history_seconds,
        cooldown_seconds=policy.job_cooldown_seconds,
        reclaim_after_seconds=policy.reclaim_after_seconds,
        plan_devices=run_plan_devices,
        plan_resumes=run_plan_resumes,
        plan_reshapes=run_plan_reshapes,
        node_cooldown_seconds=policy.time_slicing.node_cooldown_seconds,
        contention_busy_above=policy.time_slicing.contention_busy_above,
        may_resume=resumes_possible,
    )
