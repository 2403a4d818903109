"""The state of one replay and the life of its jobs: queued, running, suspended, done.

A job arrives queued in its tenant queue; the scheduler starts it when it fits; it runs until it
has done its trace run time (`progress` counts the seconds of its profile it has been through).
A preempted job stops at once and loses the work it did since its last checkpoint (or its
start): its time at or above the idle threshold, which it must do again. Idle time is not redone
(a job waiting for a user, for data or for requests does not wait again for what already came),
so its progress steps back by the work lost, not to the checkpoint
(`sim_sharing.usage.work_seconds`).

What happens to a victim then depends on who preempted it:
- the controller's planner (`allocation`, `forecast`) *suspends* it, as the actuator suspends a
  PyTorchJob or aborts a Volcano Job: it is not pending in any queue, and comes back only when
  the controller's own plan resumes it (cool-down over, no starved queue still waiting, room to
  fit), at the back of its queue;
- the idle culler (`threshold`) has no resume: its victim is re-queued at once, as a deleted pod
  is recreated by its owner.

A job on a time-sliced GPU progresses at the rate its share of the GPU's time allows
(`sim_sharing.contention`; the rates are set by `sim_pool.timeslice`): its progress falls behind its
run time by its `lag`, and its completion is rescheduled whenever its rate changes. A job OOM-killed
there loses its work since its last checkpoint, as a preempted one does, but keeps its pod, node and
replica: the kubelet restarts its container there, or the Job controller fails the job
(`sim_pool.crashes`, `sim_sharing.restarts`). A run makes no progress until it is warm (`warm`): a
restarted container, or a job starting again after a preemption, first loads its model (its cold
start), holding its GPU, reading idle and putting no load or memory on a shared GPU (a model load
copies weights to the device; NVML's utilization counts only time with a kernel running). A finished
job's slowdown is its time running (cold starts and back-offs included), over all its runs, over
its trace run time; a job cut at the end of the replay, its time running over its progress.

Every time a job waits, queued or suspended, counts as its wait. Optional `Event`s report each
change of state (for tracing a replay job by job, and for tests); they and a job's `Run` are
plain data, in `lifecycle`, re-exported here.
"""

from __future__ import annotations

import heapq
from collections.abc import Callable
from dataclasses import replace

from reclaimer.model import PendingDemand, Queue, StopWarning
from reclaimer.policy.settings import Policy
from reclaimer.simulate.lifecycle import Event, EventKind, Run
from reclaimer.simulate.results import SharingTally, Tally
from reclaimer.simulate.scheduler import Cluster, Placement, Queues
from reclaimer.simulate.settings import SimSettings, default_shares
from reclaimer.simulate.sharing.cobusy import LATENCY_SENSITIVE, CobusyLog
from reclaimer.simulate.sharing.contention import node_gib
from reclaimer.simulate.sharing.contentionlog import ContentionLog, RunningBusy
from reclaimer.simulate.sharing.loadlog import LoadLog
from reclaimer.simulate.sharing.peaklog import PeakLog
from reclaimer.simulate.sharing.restarts import CrashLoop
from reclaimer.simulate.sharing.usage import Usage
from reclaimer.simulate.strategies import (
    SLOTS_PER_GPU,
    ReplayPlanner,
    device_name,
    make_job,
    slots_of,
)
from reclaimer.simulate.trace import BoolArray, IntArray, Jobs, Nodes

COMPLETE, ARRIVE, TICK, SHARE, RESTART, WARM = 0, 1, 2, 3, 4, 5
MIN_SLOWDOWN_PROGRESS = 60.0  # a job cut with less progress than this has no slowdown measured
DEFAULT_POLICY = Policy()  # the replay's idle definition without a planner

__all__ = ["Event", "EventKind", "Replay", "Run"]


class Replay:
    """Mutable state of one replay; only `simulate` (and its ticks, `sim_ticks`) drive it."""

    def __init__(
        self,
        jobs: Jobs,
        nodes: Nodes,
        usage: Usage,
        settings: SimSettings,
        planner: ReplayPlanner | None,
        *,
        replicas: IntArray | None = None,
        pool: BoolArray | None = None,
    ) -> None:
        self.jobs, self.nodes, self.usage, self.settings = jobs, nodes, usage, settings
        self.planner = planner
        self.threshold = planner.threshold if planner else DEFAULT_POLICY.threshold
        self.cluster = Cluster(nodes, replicas, pool)
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
        ls = LATENCY_SENSITIVE in self.guaranteed  # its pods' co-busy share is reported
        self.cobusy = CobusyLog(usage, [ls and q == LATENCY_SENSITIVE for q in jobs.queues])
        self.slots = [slots_of(int(m)) for m in jobs.milli]
        n = len(jobs.names)
        self.keys = [f"{q}/{name}" for q, name in zip(jobs.queues, jobs.names, strict=True)]
        self.base = [0.0] * n
        self.epoch = [0] * n
        self.pending_since: dict[int, float] = {}  # queued or suspended, since
        self.demand: dict[int, PendingDemand] = {}
        self.served: dict[int, PendingDemand] = {}  # of `demand`, in queues deserving GPUs
        self.suspended: dict[int, float] = {}  # held by the reclaimer, since
        self.stop_reasons: dict[int, str] = {}  # held by the reclaimer: the plan's reason
        self.warned: dict[int, StopWarning] = {}  # running, a stop scheduled (its record)
        self.waited = [0.0] * n
        self.runs: dict[int, Run] = {}
        self.ran = [0.0] * n  # seconds running, over every run
        self.slowdowns: dict[str, list[float]] = {}  # per queue, of the finished jobs
        self.changed: set[tuple[int, int]] = set()  # time-sliced GPUs whose pods changed
        self.on_device: dict[tuple[int, int], list[int]] = {}  # time-sliced GPU: its jobs
        self.oom_kills = 0
        self.guaranteed_oom_kills = 0
        self.crash_loops: dict[int, CrashLoop] = {}  # pods with container restarts: their count
        self.launches = [0] * n  # starts and container restarts per job (cold after the first)
        self.failed_jobs = 0  # failed by their Job's backoffLimit
        self.guaranteed_failed_jobs = 0
        self.last_reshape: dict[int, float] = {}  # node: when its replicas last changed
        self.key_written: dict[int, tuple[float, int]] = {}  # node: (at, replicas) not relabelled
        self.reshapes = 0  # replica changes applied (relabels)
        self.reshape_reasons: dict[int, str] = {}  # node: the plan's reason for its last reshape
        self.crashes: list[tuple[float, int, int]] = []  # OOM kills on the pool: (at, node, job)
        self.load_log = LoadLog()  # pool nodes' load, as Prometheus would hold it
        self.peak_log = PeakLog()  # pods' memory peaks, as Prometheus would hold them
        self.contention_log = ContentionLog()  # pods' busy and co-busy time, read hourly
        self.device_gib: dict[int, float] = {}  # node: GiB per GPU (`sim_pool.timeslice`, cached)
        self.reclaimable_running = 0
        self.last_actions: dict[str, float] = {}
        self.tally = Tally()
        self.heap: list[tuple[float, int, int, int]] = []
        self.dirty = False  # something changed since the last scheduling pass
        self.on_event: Callable[[Event], None] | None = None

    def sharing_tally(self) -> SharingTally:
        sliced = self.cluster.sliced
        return SharingTally(
            slowdowns={q: list(v) for q, v in self.slowdowns.items()},
            oom_kills=self.oom_kills,
            guaranteed_oom_kills=self.guaranteed_oom_kills,
            timesliced_gpus=int(self.nodes.gpus[sliced].sum()),
            ls_busy_seconds=self.cobusy.busy_seconds,
            ls_cobusy_seconds=self.cobusy.cobusy_seconds,
            failed_jobs=self.failed_jobs,
            guaranteed_failed_jobs=self.guaranteed_failed_jobs,
        )

    def node_gib(self, node: int) -> float:
        """GiB of each GPU of `node`: as the node list measured it, else its model's
        (`sim_sharing.contention.device_gib`; every GPU of a node is the same model), cached."""
        if node not in self.device_gib:
            self.device_gib[node] = node_gib(self.nodes, node, self.settings.anonymized_gib)
        return self.device_gib[node]

    def _emit(self, kind: EventKind, now: float, job: int, progress: float) -> None:
        if self.on_event is not None:
            self.on_event(Event(kind, now, job, progress))

    # -- lifecycle of a job ------------------------------------------------------------------
    def enqueue(self, job: int, now: float) -> None:
        self.pending_since[job] = now
        self._queue(job, now)
        self._emit(EventKind.QUEUED, now, job, self.base[job])

    def _queue(self, job: int, now: float) -> None:
        queue = self.jobs.queues[job]
        count = int(self.jobs.num_gpu[job])
        self.demand[job] = PendingDemand(
            queue=queue,
            job=self.keys[job],
            gpus=self.slots[job] * count,
            min_member=count,
            since=now,
        )
        if self.queues.deserved.get(queue, 0.0) > 0.0:
            self.served[job] = self.demand[job]
        self.queues.enqueue(job)
        self.dirty = True

    def start(self, job: int, placement: Placement, now: float) -> None:
        self.waited[job] += now - self.pending_since.pop(job)
        del self.demand[job]
        self.served.pop(job, None)
        queue = self.jobs.queues[job]
        node = self.nodes.names[placement.node]
        devices = tuple(device_name(node, d) for d in placement.devices)
        # a one-GPU pod on the pool holds one replica: a whole GPU in the planner's view of it
        slots = SLOTS_PER_GPU if placement.replica else self.slots[job]
        spec, pods = make_job(self.keys[job], queue, devices, slots, now)
        self.runs[job] = Run(placement, now, self.base[job], spec, pods, rate=0.0, since=now)
        self.reclaimable_running += queue in self.settings.reclaimable
        cold = self.cold_start(job)
        if self.on_event is not None:
            event = Event(EventKind.STARTED, now, job, self.base[job])
            self.on_event(replace(event, placement=placement, cold_start=cold))
        self.warm_after(job, now, cold)

    def cold_start(self, job: int) -> float:
        """Seconds this (re)start of the job loads before it makes progress: none the first
        time (the trace's run time holds it), else a draw (`sim_sharing.restarts.ColdStarts`)."""
        nth = self.launches[job]
        self.launches[job] += 1
        return self.settings.cold_starts.draw(self.settings.seed, job, nth - 1) if nth else 0.0

    def warm_after(self, job: int, now: float, cold: float) -> None:
        if cold > 0.0:
            heapq.heappush(self.heap, (now + cold, WARM, job, self.epoch[job]))
        else:
            self.warm(job, now)

    def warm(self, job: int, now: float) -> None:
        """The job's container is up and its model loaded: it makes progress from `now`, and a
        time-sliced GPU's sharing counts it from now."""
        run = self.runs[job]
        run.lag += (1.0 - run.rate) * (now - run.since)  # rate 0: all of the wait and load
        run.rate, run.since, run.warm_at = 1.0, now, now
        self.epoch[job] += 1
        done_at = now + float(self.jobs.runtime[job]) - run.progress(now)
        heapq.heappush(self.heap, (done_at, COMPLETE, job, self.epoch[job]))
        if run.placement.replica:
            where = (run.placement.node, run.placement.devices[0])
            self.changed.add(where)
            self.on_device.setdefault(where, []).append(job)

    def stop(self, job: int, now: float) -> float:
        """End the job's run and free its pod's GPUs at `now`; returns its progress then."""
        run = self.runs.pop(job)
        self.cluster.release(run.placement)
        self.crash_loops.pop(job, None)  # a new pod starts with no restarts
        if run.placement.replica:
            where = (run.placement.node, run.placement.devices[0])
            self.changed.add(where)
            if job in self.on_device.get(where, ()):
                self.on_device[where].remove(job)
        queue = self.jobs.queues[job]
        self.queues.allocated[queue] -= float(self.jobs.gpus[job])
        self.reclaimable_running -= queue in self.settings.reclaimable
        self.dirty = True
        return self.settle(job, run, now)

    def settle(self, job: int, run: Run, now: float) -> float:
        """Count a run's time, busy time and memory peak up to `now`; returns its progress."""
        self.ran[job] += now - run.started
        progress = run.progress(now)
        gib = self.node_gib(run.placement.node)
        self.peak_log.ended(
            self.keys[job], now, self.usage.memory_peak(job, run.base, progress, gib)
        )
        busy = self.usage.busy_seconds(job, run.base, progress)
        self.tally.segment(float(self.jobs.gpus[job]), now - run.started, busy)
        self.cobusy.ended(job, run.base, progress)
        ran = RunningBusy(self.keys[job], job, run.base, progress)
        self.contention_log.ended(ran, now, self.usage.nonzero_seconds, self.cobusy.so_far)
        return progress

    def finish(self, job: int, now: float) -> None:
        progress = self.stop(job, now)
        queue = self.jobs.queues[job]
        self.tally.waited(queue, self.waited[job])
        # a job cut at the replay's end: its time running over the progress it made so far
        done = min(progress, float(self.jobs.runtime[job]))
        if done >= MIN_SLOWDOWN_PROGRESS:
            self.slowdowns.setdefault(queue, []).append(max(self.ran[job] / done, 1.0))
        self._emit(EventKind.FINISHED, now, job, progress)

    def lost_work(self, job: int, progress: float) -> float:
        """The work (not the idle time) a job stopped at `progress` must redo: all it did since
        its last checkpoint."""
        every = self.settings.checkpoint_seconds
        kept = (progress // every) * every if every else 0.0
        return self.usage.work_seconds(job, kept, progress)

    def preempt(self, job: int, now: float, *, suspend: bool, reason: str = "") -> None:
        """Stop the job; it must redo its work (not its idle time) since its last checkpoint.
        A suspended job keeps the plan's `reason` (its `Job.stop_reason`) until resumed."""
        progress = self.stop(job, now)
        self.warned.pop(job, None)  # the stop clears its warning, as the actuator's does
        lost = self.lost_work(job, progress)
        queue = self.jobs.queues[job]
        wrongful = self.usage.busy_within_horizon(job, progress, self.threshold)
        self.tally.preempted(float(self.jobs.gpus[job]), lost, wrongful, queue in self.guaranteed)
        self.base[job] = progress - lost
        self.epoch[job] += 1
        self.last_actions[self.keys[job]] = now
        if self.on_event is not None:
            self.on_event(Event(EventKind.PREEMPTED, now, job, progress, lost, suspend, wrongful))
        if suspend:
            self.suspended[job] = now
            self.stop_reasons[job] = reason
            self.pending_since[job] = now
        else:
            self.enqueue(job, now)

    def resume(self, job: int, now: float) -> None:
        """A suspended job goes back to its queue; it has been waiting since its preemption."""
        del self.suspended[job]
        self.stop_reasons.pop(job, None)
        self.last_actions[self.keys[job]] = now  # the actuator marks resumes as actions too
        self._queue(job, now)
        self._emit(EventKind.RESUMED, now, job, self.base[job])
