"""Replay a cluster trace through the scheduler model under one reclaim policy.

Event-driven: a heap of arrivals, completions and control ticks, in time order (completions
first at equal times, so freed GPUs are seen by the arrivals and ticks of that instant). After
each event that frees GPUs or adds a pending job, the scheduler places what fits. Control ticks
fall on a fixed grid (`interval_seconds`) but only while the policy could act: while a
reclaimable job runs for the idle culler, while a guaranteed queue has pending demand and a
reclaimable job runs for the planners. At a tick the policy names victims; each is preempted
whole: the work it did since its last checkpoint (or its start) is lost (its time at or above
the idle threshold; idle time is waiting, not work, and is not redone: see `sim_usage`), its
progress steps back by that much, and it is re-queued at the back of its queue. Completion
events carry the run's epoch, so a preempted run's completion is ignored. The replay ends when
the trace does (the last arrival + runtime): runs still going are cut there and pending jobs'
waits are censored.

Pure and deterministic for given inputs and seed (the seed only picks utilization profiles).
"""

from __future__ import annotations

import heapq
import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType

from reclaimer.model import Job, Node, PendingDemand, Pod, Queue
from reclaimer.sim_devices import planned_victims
from reclaimer.sim_metrics import SimResult, Tally, summarize
from reclaimer.sim_policies import (
    SLOTS_PER_GPU,
    Controller,
    PolicyName,
    RunningJob,
    TickView,
    culler_victims,
    device_name,
    make_job,
    slots_of,
)
from reclaimer.sim_scheduler import Cluster, Placement, Queues
from reclaimer.sim_trace import Jobs, Nodes, Profiles
from reclaimer.sim_usage import Usage, assign_usage

COMPLETE, ARRIVE, TICK = 0, 1, 2
RECLAIMABLE = frozenset({"be"})


@dataclass(frozen=True)
class SimSettings:
    policy: PolicyName
    seed: int = 0
    interval_seconds: float = 300.0
    idle_window_seconds: float = 1800.0  # the culler's "idle for N minutes"
    checkpoint_seconds: float | None = None
    reclaimable: frozenset[str] = RECLAIMABLE
    queue_shares: Mapping[str, float] = field(default_factory=lambda: MappingProxyType({}))


def default_shares(jobs: Jobs, reclaimable: frozenset[str]) -> dict[str, float]:
    """Guaranteed queues share the cluster in proportion to their GPU-seconds in the trace."""
    demand: dict[str, float] = {}
    for queue, gpus, runtime in zip(jobs.queues, jobs.gpus, jobs.runtime, strict=True):
        if queue not in reclaimable:
            demand[queue] = demand.get(queue, 0.0) + float(gpus * runtime)
    total = sum(demand.values()) or 1.0
    return {q: d / total for q, d in sorted(demand.items())}


@dataclass
class Run:
    placement: Placement
    started: float
    base: float  # progress at the start of this run
    job: Job
    pods: tuple[Pod, ...]


class Replay:
    """Mutable state of one replay; only `simulate` drives it."""

    def __init__(
        self,
        jobs: Jobs,
        nodes: Nodes,
        usage: Usage,
        settings: SimSettings,
        controller: Controller | None,
    ) -> None:
        self.jobs, self.nodes, self.usage, self.settings = jobs, nodes, usage, settings
        self.controller = controller
        self.threshold = controller.threshold if controller else 0.05
        self.cluster = Cluster(nodes)
        queue_names = sorted(set(jobs.queues))
        shares = dict(settings.queue_shares) or default_shares(jobs, settings.reclaimable)
        deserved = {q: shares.get(q, 0.0) * self.cluster.total_gpus for q in queue_names}
        self.queues = Queues(deserved, jobs)
        self.queue_objects = tuple(
            Queue(
                name=q,
                deserved_gpus=deserved[q] * SLOTS_PER_GPU,
                reclaimable=q in settings.reclaimable,
            )
            for q in queue_names
        )
        self.guaranteed = frozenset(q for q in queue_names if q not in settings.reclaimable)
        self.node_objects = tuple(
            Node(name=device_name(n, d), gpus=1, replicas=SLOTS_PER_GPU)
            for n, g in zip(nodes.names, nodes.gpus, strict=True)
            for d in range(int(g))
        )
        self.slots = [slots_of(int(m)) for m in jobs.milli]
        n = len(jobs.names)
        self.keys = [f"{q}/{name}" for q, name in zip(jobs.queues, jobs.names, strict=True)]
        self.base = [0.0] * n
        self.epoch = [0] * n
        self.pending_since: dict[int, float] = {}
        self.demand: dict[int, PendingDemand] = {}
        self.waited = [0.0] * n
        self.runs: dict[int, Run] = {}
        self.reclaimable_running = 0
        self.last_actions: dict[str, float] = {}
        self.tally = Tally()
        self.heap: list[tuple[float, int, int, int]] = []
        self.dirty = False  # something changed since the last scheduling pass

    # -- lifecycle of a job ------------------------------------------------------------------
    def enqueue(self, job: int, now: float) -> None:
        self.pending_since[job] = now
        queue = self.jobs.queues[job]
        count = int(self.jobs.num_gpu[job])
        self.demand[job] = PendingDemand(
            queue=queue,
            job=self.keys[job],
            gpus=self.slots[job] * count,
            min_member=count,
            since=now,
        )
        self.queues.enqueue(job)
        self.dirty = True

    def start(self, job: int, placement: Placement, now: float) -> None:
        self.waited[job] += now - self.pending_since.pop(job)
        del self.demand[job]
        queue = self.jobs.queues[job]
        node = self.nodes.names[placement.node]
        devices = tuple(device_name(node, d) for d in placement.devices)
        spec, pods = make_job(self.keys[job], queue, devices, self.slots[job], now)
        self.runs[job] = Run(placement, now, self.base[job], spec, pods)
        self.reclaimable_running += queue in self.settings.reclaimable
        done_at = now + float(self.jobs.runtime[job]) - self.base[job]
        heapq.heappush(self.heap, (done_at, COMPLETE, job, self.epoch[job]))

    def stop(self, job: int, now: float) -> float:
        """End the job's run at `now`; returns its progress then."""
        run = self.runs.pop(job)
        self.cluster.release(run.placement)
        queue = self.jobs.queues[job]
        gpus = float(self.jobs.gpus[job])
        self.queues.allocated[queue] -= gpus
        self.reclaimable_running -= queue in self.settings.reclaimable
        self.dirty = True
        progress = run.base + (now - run.started)
        busy = self.usage.busy_seconds(job, run.base, progress)
        self.tally.segment(gpus, now - run.started, busy)
        return progress

    def finish(self, job: int, now: float) -> None:
        self.stop(job, now)
        self.tally.waited(self.jobs.queues[job], self.waited[job])

    def preempt(self, job: int, now: float) -> None:
        """Stop the job; it must redo its work (not its idle time) since its last checkpoint."""
        progress = self.stop(job, now)
        every = self.settings.checkpoint_seconds
        kept = (progress // every) * every if every else 0.0
        lost = self.usage.work_seconds(job, kept, progress)
        queue = self.jobs.queues[job]
        wrongful = self.usage.busy_within_horizon(job, progress, self.threshold)
        self.tally.preempted(float(self.jobs.gpus[job]), lost, wrongful, queue in self.guaranteed)
        self.base[job] = progress - lost
        self.epoch[job] += 1
        self.last_actions[self.keys[job]] = now
        self.enqueue(job, now)

    # -- control ticks -----------------------------------------------------------------------
    def wants_tick(self) -> bool:
        """Could the policy act at some coming tick? (Cheap; checked after every event.)"""
        policy = self.settings.policy
        if policy is PolicyName.NONE or not self.reclaimable_running:
            return False
        return policy is PolicyName.THRESHOLD or self.queues.has_pending(self.guaranteed)

    def worth_planning(self, now: float) -> bool:
        """Could the plan preempt anything now? Skips cycles where it provably cannot.

        The planner only takes victims old enough, out of their cool-down and (for the forecast
        policy) with enough history to be forecast idle, and only when what they free fits a
        starved job; `forecast()` keeps no state, so a skipped call changes nothing.
        """
        ctl = self.controller
        if self.settings.policy is PolicyName.THRESHOLD or ctl is None:
            return True
        min_age = ctl.min_runtime_seconds
        if self.settings.policy is PolicyName.FORECAST:
            min_age = max(min_age, ctl.min_history_seconds)
        released = [
            run.placement
            for j, run in self.runs.items()
            if self.jobs.queues[j] in self.settings.reclaimable
            and now - run.started >= min_age
            and now - self.last_actions.get(self.keys[j], -math.inf) >= ctl.cooldown_seconds
        ]
        if not released:
            return False
        shapes = self.queues.pending_shapes(self.guaranteed)
        return self.cluster.could_fit(released, shapes)

    def view(self, now: float) -> TickView:
        running = tuple(
            RunningJob(
                index=j,
                job=run.job,
                pods=run.pods,
                progress=run.base + now - run.started,
                elapsed=now - run.started,
                reclaimable=self.jobs.queues[j] in self.settings.reclaimable,
            )
            for j, run in self.runs.items()
        )
        return TickView(
            now=now,
            running=running,
            pending=tuple(self.demand.values()),
            queues=self.queue_objects,
            nodes=self.node_objects,
            last_actions=MappingProxyType(dict(self.last_actions)),
        )

    def victims(self, now: float) -> list[int]:
        view = self.view(now)
        policy = self.settings.policy
        if policy is PolicyName.THRESHOLD:
            window = self.settings.idle_window_seconds
            return culler_victims(view, self.usage, self.threshold, window)
        if self.controller is None:
            raise ValueError(f"policy {policy} needs a controller")
        return planned_victims(view, self.usage, self.controller, policy is PolicyName.ALLOCATION)


def simulate(
    jobs: Jobs,
    nodes: Nodes,
    profiles: Profiles,
    settings: SimSettings,
    *,
    controller: Controller | None = None,
    on_progress: Callable[[float], None] | None = None,
) -> SimResult:
    """Replay `jobs` on `nodes` under `settings.policy`; pure and deterministic for a seed."""
    horizon = controller.horizon_seconds if controller else 900.0
    threshold = controller.threshold if controller else 0.05
    usage = assign_usage(
        profiles,
        len(jobs.names),
        settings.seed,
        settings.idle_window_seconds,
        horizon,
        threshold=threshold,
    )
    replay = Replay(jobs, nodes, usage, settings, controller)
    for j in range(len(jobs.names)):
        if replay.cluster.fits_anywhere_empty(int(jobs.num_gpu[j]), int(jobs.milli[j])):
            replay.heap.append((float(jobs.arrival[j]), ARRIVE, j, 0))
    heapq.heapify(replay.heap)
    begin = float(jobs.arrival.min())
    end = float((jobs.arrival + jobs.runtime).max())
    _run_events(replay, end, on_progress, begin)
    _close(replay, end)
    gpus = float(nodes.gpus.sum())
    return summarize(settings.policy.value, replay.tally, gpus, end - begin, replay.guaranteed)


def _run_events(
    replay: Replay, end: float, on_progress: Callable[[float], None] | None, begin: float
) -> None:
    interval = replay.settings.interval_seconds
    tick_at: float | None = None
    count = 0
    while replay.heap and replay.heap[0][0] <= end:
        now, kind, job, epoch = heapq.heappop(replay.heap)
        if kind == COMPLETE:
            if epoch != replay.epoch[job]:
                continue
            replay.finish(job, now)
        elif kind == ARRIVE:
            replay.enqueue(job, now)
        else:
            tick_at = None
            if replay.wants_tick() and replay.worth_planning(now):
                for victim in replay.victims(now):
                    replay.preempt(victim, now)
        if replay.dirty:
            replay.dirty = False
            for placed, spot in replay.queues.schedule(replay.cluster):
                replay.start(placed, spot, now)
        if tick_at is None and replay.wants_tick():
            tick_at = (now // interval + 1) * interval
            heapq.heappush(replay.heap, (tick_at, TICK, -1, 0))
        count += 1
        if on_progress is not None and count % 512 == 0:
            on_progress((now - begin) / max(end - begin, 1.0))


def _close(replay: Replay, end: float) -> None:
    for job in sorted(replay.runs):
        replay.finish(job, end)
    for job, since in sorted(replay.pending_since.items()):
        replay.tally.waited(replay.jobs.queues[job], replay.waited[job] + end - since)
