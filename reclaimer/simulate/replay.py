"""Replay a cluster trace through the scheduler model under one reclaim policy.

Event-driven: a heap of arrivals, completions and control ticks, in time order (completions
first at equal times, so freed GPUs are seen by the arrivals and ticks of that instant). After
each event that frees GPUs or adds a pending job, the scheduler places what fits. Control ticks
(`sim_ticks`) fall on a fixed grid only while the policy could act; at a tick the policy
preempts its victims and, for the planners, resumes the victims the controller's plan gives
back. What a preemption costs, and what becomes of a victim, is `sim_replay`'s. Completion
events carry the run's epoch, so a preempted run's completion is ignored. The replay ends when
the trace does (the last arrival + runtime): runs still going are cut there, and the waits of
queued and suspended jobs are censored.

Pure and deterministic for given inputs and seed (the seed only picks utilization profiles, and
with `--profile-offsets random` where they start, for the jobs that have none of their own:
`simulate.usage`, `simulate.load`). A pod list that flags its queues
reclaimable (`trace.Jobs.reclaimable`) replaces the settings' reclaimable queues.
"""

from __future__ import annotations

import heapq
from collections.abc import Callable
from dataclasses import replace

from reclaimer.simulate.jobs import (
    ARRIVE,
    COMPLETE,
    DEFAULT_POLICY,
    RESTART,
    SHARE,
    TICK,
    WARM,
    Event,
    Replay,
)
from reclaimer.simulate.pool import crashes
from reclaimer.simulate.pool.timeslice import reprice, shared_devices
from reclaimer.simulate.pool.tuned import start_replicas, tuned_pool
from reclaimer.simulate.results import SimResult, result_of
from reclaimer.simulate.settings import SimSettings
from reclaimer.simulate.sharing.load import ProfileOffsets
from reclaimer.simulate.sharing.memory import memory_replay
from reclaimer.simulate.sharing.share_memory import memory_shares
from reclaimer.simulate.sharing.usage import assign_usage
from reclaimer.simulate.strategies import ReplayPlanner, Strategy
from reclaimer.simulate.ticks import tick, wants_tick
from reclaimer.simulate.trace import FloatArray, Jobs, Nodes, Profiles

# the strategies with a pool
SLICING = frozenset({Strategy.TIMESLICE, Strategy.FORECAST, Strategy.TIMESLICE_TUNED})

__all__ = ["SimSettings", "replay_result", "replay_span", "run_replay", "simulate"]


def simulate(
    jobs: Jobs,
    nodes: Nodes,
    profiles: Profiles,
    settings: SimSettings,
    *,
    planner: ReplayPlanner | None = None,
    on_progress: Callable[[float], None] | None = None,
    on_event: Callable[[Event], None] | None = None,
    memory: FloatArray | None = None,
) -> SimResult:
    """Replay `jobs` on `nodes` under `settings.strategy`; pure and deterministic for a seed.

    `on_progress` gets the fraction of the trace replayed now and then; `on_event` every change
    of a job's state (`sim_replay.Event`), for tracing a replay job by job.
    """
    replay = run_replay(
        jobs,
        nodes,
        profiles,
        settings,
        planner=planner,
        on_progress=on_progress,
        on_event=on_event,
        memory=memory,
    )
    return replay_result(replay)


def replay_result(replay: Replay) -> SimResult:
    """What a finished replay measured."""
    begin, end = replay_span(replay.jobs)
    gpus = float(replay.nodes.gpus.sum())
    strategy = replay.settings.strategy.value
    return result_of(
        strategy,
        replay.tally,
        gpus,
        end - begin,
        replay.guaranteed,
        own_utilization_jobs=replay.usage.own,
        sharing=replay.sharing_tally(),
        memory_replay=memory_replay(replay.usage.memory, replay.nodes).value,
        tuned=_tuned(replay),
    )


def _tuned(replay: Replay) -> dict[str, dict[str, float]]:
    """`timeslice-tuned`'s choice per GPU model (`sim_pool.tuned`), for the result; {} otherwise."""
    if replay.settings.strategy is not Strategy.TIMESLICE_TUNED:
        return {}
    models = tuned_pool(replay.jobs, replay.nodes, replay.usage, replay.settings)[1]
    return {model: choice.as_dict() for model, choice in models.items()}


def replay_span(jobs: Jobs) -> tuple[float, float]:
    """The replay runs from the first arrival to the end of the trace (last arrival + runtime)."""
    return float(jobs.arrival.min()), float((jobs.arrival + jobs.runtime).max())


def run_replay(
    jobs: Jobs,
    nodes: Nodes,
    profiles: Profiles,
    settings: SimSettings,
    *,
    planner: ReplayPlanner | None = None,
    on_progress: Callable[[float], None] | None = None,
    on_event: Callable[[Event], None] | None = None,
    memory: FloatArray | None = None,
) -> Replay:
    """`simulate`'s replay, returned whole once done (its usage, tally and queues), for callers
    that measure more than `SimResult` (the report's timeline)."""
    if jobs.reclaimable is not None:  # the pod list says which queues are reclaimable
        settings = replace(settings, reclaimable=jobs.reclaimable)
    horizon = planner.horizon_seconds if planner else DEFAULT_POLICY.horizon_seconds
    threshold = planner.threshold if planner else DEFAULT_POLICY.threshold
    usage = assign_usage(
        profiles,
        len(jobs.names),
        settings.seed,
        settings.idle_window_seconds,
        horizon,
        threshold=threshold,
        job_names=jobs.names,
        arrival=jobs.arrival if settings.profile_offsets is ProfileOffsets.ARRIVAL else None,
    )
    if memory is not None:
        capped = (
            settings.share_memory_cap and not nodes.measured_memory
        )  # `sim_sharing.share_memory`
        shares = memory_shares(jobs, profiles) if capped else None
        usage = replace(usage, memory=memory, memory_share=shares)
    start = start_replicas(jobs, nodes, usage, settings) if settings.strategy in SLICING else None
    replicas, pool = (None, None) if start is None else start
    replay = Replay(jobs, nodes, usage, settings, planner, replicas=replicas, pool=pool)
    replay.on_event = on_event
    for j in range(len(jobs.names)):
        if replay.cluster.fits_anywhere_empty(int(jobs.num_gpu[j]), int(jobs.milli[j])):
            replay.heap.append((float(jobs.arrival[j]), ARRIVE, j, 0))
    heapq.heapify(replay.heap)
    begin, end = replay_span(jobs)
    _run_events(replay, end, on_progress, begin)
    _close(replay, end)
    return replay


def _run_events(
    replay: Replay, end: float, on_progress: Callable[[float], None] | None, begin: float
) -> None:
    interval = replay.settings.interval_seconds
    share_step = replay.settings.share_step_seconds
    tick_at: float | None = None
    share_at: float | None = None
    count = 0
    while replay.heap and replay.heap[0][0] <= end:
        now, kind, job, epoch = heapq.heappop(replay.heap)
        if kind in (COMPLETE, RESTART, WARM) and epoch != replay.epoch[job]:
            continue  # stopped, killed or re-rated since
        if kind == COMPLETE:
            replay.finish(job, now)
        elif kind == ARRIVE:
            replay.enqueue(job, now)
        elif kind == RESTART:
            crashes.restart(replay, job, now)
        elif kind == WARM:
            replay.warm(job, now)
        elif kind == SHARE:
            share_at = None
            replay.changed |= shared_devices(replay)
        else:
            tick_at = None
            if wants_tick(replay):
                tick(replay, now)
        _settle(replay, now)
        if share_at is None and replay.on_device and shared_devices(replay):
            share_at = (now // share_step + 1) * share_step
            heapq.heappush(replay.heap, (share_at, SHARE, -1, 0))
        if tick_at is None and wants_tick(replay):
            tick_at = (now // interval + 1) * interval
            heapq.heappush(replay.heap, (tick_at, TICK, -1, 0))
        count += 1
        if on_progress is not None and count % 512 == 0:
            on_progress((now - begin) / max(end - begin, 1.0))


def _settle(replay: Replay, now: float) -> None:
    """Place what fits, and re-price the time-sliced GPUs whose pods changed, until calm (an
    OOM-killed pod keeps its replica: its container comes back after its back-off)."""
    while replay.dirty or replay.changed:
        if replay.dirty:
            replay.dirty = False
            for placed, spot in replay.queues.schedule(replay.cluster):
                replay.start(placed, spot, now)
        if replay.changed:
            changed, replay.changed = replay.changed, set()
            reprice(replay, changed, now)


def _close(replay: Replay, end: float) -> None:
    for job in sorted(replay.runs):
        replay.finish(job, end)
    for job, since in sorted(replay.pending_since.items()):
        replay.tally.waited(replay.jobs.queues[job], replay.waited[job] + end - since)
