"""A replay's control ticks: when one is needed, and what the policy does at it.

Ticks fall on a fixed grid (`interval_seconds`) but only while the policy could act: for the idle
culler, while a reclaimable job runs; for the planners, while a guaranteed queue has pending
demand and a reclaimable job runs (to preempt), and while a victim is suspended (to resume it).

At a tick the culler re-queues the jobs it culls at once. The planners run the controller's own
`forecast()` and `plan()` (`sim_devices.planned_victims`) and suspend the victims; a tick that
preempts nothing, while a suspended victim is past its cool-down, asks the controller's plan
which victims to resume (`sim_devices.planned_resumes`). Both shortcuts below skip only calls
whose answer is provably empty: `forecast()` keeps no state, so a skipped call changes nothing.

Under `forecast` with a time-sliced pool, each cycle first reads the pool as the controller would
(`sim_pool.timeslice.pool_readings`), records each node's load for its history
(`sim_sharing.loadlog`), and shows the per-pod readings to the preempt and resume plans
(`sim_pool.reshaping.device_rows`); a cycle where a busy reclaimable pod shares a GPU with a busy
guaranteed one plans a preemption even with no queue starved (contention relief needs no forecast,
so none is made), and a suspended job keeps the reason it was stopped for (`Job.stop_reason`).
Under a policy with warnings before a stop (`warning:`), a tick's warnings are kept as each job's
record (`Replay.warned`), which the next ticks' views carry (`Job.warning`), so the plan holds the
job, stops it once due, or withdraws the warning, as in the controller.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable
from dataclasses import replace
from types import MappingProxyType

from reclaimer.decisions import Action, ActionKind, Reason
from reclaimer.model import DataQuality, PendingDemand, PodGpuUsage, Snapshot, StopWarning
from reclaimer.simulate.devices import planned_resumes, planned_victims
from reclaimer.simulate.jobs import Replay
from reclaimer.simulate.pool.reshaping import (
    contended,
    device_rows,
    planned_reshapes,
    pool_view,
    shown_pods,
    wants_reshape,
)
from reclaimer.simulate.pool.timeslice import PoolReadings, pool_readings
from reclaimer.simulate.strategies import (
    STATIC,
    HeldJob,
    ReplayPlanner,
    RunningJob,
    Strategy,
    TickView,
    culler_victims,
    suspended_job,
)


def wants_tick(replay: Replay) -> bool:
    """Could the policy act at some coming tick? (Cheap; checked after every event.)"""
    policy = replay.settings.strategy
    if policy in STATIC:
        return False
    if policy is Strategy.THRESHOLD:
        return replay.reclaimable_running > 0
    if policy is Strategy.FORECAST and replay.cluster.sliced.any():
        return True  # the pool's reshapes are planned every cycle
    return bool(replay.suspended) or _starved_while_reclaimable_runs(replay)


def _starved_while_reclaimable_runs(replay: Replay) -> bool:
    return replay.reclaimable_running > 0 and replay.queues.has_pending(replay.guaranteed)


def tick(replay: Replay, now: float) -> None:
    """One control cycle at `now`: preempt what the policy names, resume what it gives back."""
    policy = replay.settings.strategy
    if policy in STATIC:
        return
    if policy is Strategy.THRESHOLD:
        window = replay.settings.idle_window_seconds
        for victim in culler_victims(view(replay, now), replay.usage, replay.threshold, window):
            replay.preempt(victim, now, suspend=False)
        return
    ctl = replay.planner
    if ctl is None:
        raise ValueError(f"policy {policy} needs a controller")
    readings = None
    if policy is Strategy.FORECAST and replay.cluster.sliced.any():
        readings = pool_readings(replay, now)  # one reading per cycle, as the controller's
        replay.load_log.record(readings.stats, now)
    rows = _device_rows_once(replay, readings)
    victims: dict[int, str] = {}
    notices: list[Action] = []
    if _starved_while_reclaimable_runs(replay) and worth_planning(replay, ctl, now):
        blind = policy is Strategy.ALLOCATION
        tick_view = view(replay, now, rows())
        victims = planned_victims(tick_view, replay.usage, ctl, blind, notices=notices)
        _record_warnings(replay, tick_view, notices, now)
    elif readings is not None and contended(replay, readings, ctl.contention_busy_above):
        victims = planned_victims(
            view(replay, now, rows()), replay.usage, ctl, False, forecasting=False
        )
    for victim, reason in victims.items():
        replay.preempt(victim, now, suspend=True, reason=reason)
    resumed = []
    cooled = any(now - t >= ctl.cooldown_seconds for t in replay.suspended.values())
    if not victims and cooled and _may_resume(replay, ctl, now):
        resumed = planned_resumes(view(replay, now, rows()), ctl)
        for job in resumed:
            replay.resume(job, now)
    if readings is not None and wants_reshape(replay, ctl, now):
        fresh = pool_readings(replay, now) if victims or resumed else readings  # pods moved
        planned_reshapes(replay, ctl, now, fresh)


def _record_warnings(
    replay: Replay, tick_view: TickView, notices: list[Action], now: float
) -> None:
    """Keep each warning's record on its job, as the actuator writes it on the object, and
    count the warnings and those withdrawn because the job turned busy within its warning."""
    by_key = {r.job.key: r.index for r in tick_view.running}
    for a in notices:
        j = by_key.get(a.target)
        if j is None:
            continue
        if a.kind is ActionKind.WARN:
            stop_at = now + a.evidence.warn_seconds
            pending = a.evidence.for_pending or ""
            replay.warned[j] = StopWarning(now, stop_at, pending, str(a.reason))
            replay.tally.warnings += 1
        elif replay.warned.pop(j, None) is not None and a.reason is Reason.BUSY_AGAIN:
            replay.tally.warnings_cancelled_busy += 1


def _device_rows_once(
    replay: Replay, readings: PoolReadings | None
) -> Callable[[], tuple[PodGpuUsage, ...]]:
    """The cycle's `device_rows`, built on first use and then kept (most cycles plan no preempt
    or resume, and building them every cycle took 4 s of a 76 s replay at 58 GPUs).

    The same rows as building them up front: they read the readings and the replay's runs,
    which nothing changes before the last use (the preempt view is built before any victim is
    stopped, and the resume view only in a cycle that stopped none).
    """
    return functools.cache(lambda: () if readings is None else device_rows(replay, readings))


def worth_planning(replay: Replay, ctl: ReplayPlanner, now: float) -> bool:
    """Could the plan preempt anything now? Skips cycles where it provably cannot.

    The planner only takes victims for a job that has waited `reclaimAfter`, only victims old
    enough, out of their cool-down and (for the forecast policy) with enough history to be
    forecast idle, and only when what they free fits a starved job.
    """
    after = ctl.reclaim_after_seconds
    pending = replay.demand.values()
    if not any(now - d.since >= after for d in pending if d.queue in replay.guaranteed):
        return False
    min_age = ctl.min_runtime_seconds
    if replay.settings.strategy is Strategy.FORECAST:
        min_age = max(min_age, ctl.min_history_seconds)
    released = [
        run.placement
        for j, run in replay.runs.items()
        if replay.jobs.queues[j] in replay.settings.reclaimable
        and now - run.started >= min_age
        and now - replay.last_actions.get(replay.keys[j], -math.inf) >= ctl.cooldown_seconds
    ]
    if not released:
        return False
    shapes = replay.queues.pending_shapes(replay.guaranteed)
    return replay.cluster.could_fit(released, shapes)


def served_demand(replay: Replay) -> tuple[PendingDemand, ...]:
    """The pending demand the planner may serve (`Replay.served`): a queue whose deserved share
    is 0 (the best-effort queue) is refused job by job (`QueueAtShare`, `plan.preempt`) whatever
    else holds, takes no victim, fits nothing and never holds a resume back, so leaving its demand
    out changes no action (the replay's event digest, `bench/simulate_bench.py --digest`, is
    the same) and spares hundreds of refusals a tick where many jobs wait. The replay keeps that
    demand as it queues and starts jobs, rather than filtering every pending job each tick."""
    return tuple(replay.served.values())


def _may_resume(replay: Replay, ctl: ReplayPlanner, now: float) -> bool:
    """The controller's `may_resume` on what it reads of free slots and held jobs (the device
    view's nodes and pods, the jobs the reclaimer holds): when it says no, the resume plan would
    resume nothing, so neither the full view nor the plan is built (most cycles of a crowded
    replay hold jobs that fit nowhere)."""
    if ctl.may_resume is None:
        return True
    nodes, shown = pool_view(replay)
    pods = tuple(p for j, run in replay.runs.items() for p in shown_pods(run.pods, shown.get(j)))
    snapshot = Snapshot(
        taken_at=now,
        queues=replay.queue_objects,
        jobs=tuple(h.job for h in _held(replay)),
        pods=pods,
        nodes=nodes,
        pending=(),
        quality=DataQuality(metrics_at=now, complete=True),
        last_actions=MappingProxyType(dict(replay.last_actions)),
    )
    return ctl.may_resume(snapshot, now)


def _held(replay: Replay) -> tuple[HeldJob, ...]:
    return tuple(
        HeldJob(
            j,
            suspended_job(
                replay.keys[j],
                replay.jobs.queues[j],
                replay.slots[j],
                int(replay.jobs.num_gpu[j]),
                since,
                stop_reason=replay.stop_reasons.get(j, ""),
            ),
        )
        for j, since in replay.suspended.items()
    )


def view(replay: Replay, now: float, pod_gpus: tuple[PodGpuUsage, ...] = ()) -> TickView:
    """What the controller would see of the replay at `now` (`pod_gpus`: the pool's readings)."""
    nodes, shown = pool_view(replay)
    running = tuple(
        RunningJob(
            index=j,
            job=replace(run.job, warning=replay.warned[j]) if j in replay.warned else run.job,
            pods=shown_pods(run.pods, shown.get(j)),
            progress=run.progress(now),
            elapsed=now - run.started,
            reclaimable=replay.jobs.queues[j] in replay.settings.reclaimable,
        )
        for j, run in replay.runs.items()
    )
    held = _held(replay)
    return TickView(
        now=now,
        running=running,
        pending=served_demand(replay),
        queues=replay.queue_objects,
        nodes=nodes,
        last_actions=MappingProxyType(dict(replay.last_actions)),
        suspended=held,
        pod_gpus=pod_gpus,
    )
