"""What an OOM kill does to a replay: the container dies, the pod stays, and it restarts or fails.

`oom_kill` (called by `sim_pool.timeslice` when a time-sliced GPU's memory runs out) ends the
container's run: its work since the last checkpoint is lost, as a preempted job's is, and it stops
putting load or memory on the GPU. Its pod keeps its node, its replica and its queue's allocation,
and a new run begins at once that makes no progress (`Run.rate` 0) until the kubelet's back-off
is over (`sim_sharing.restarts.crashed`). Then `restart` either restarts the container in place,
which loads its model first (a cold start, `Replay.warm_after`) and then runs where it ran, or, when
that restart brings the pod's restarts to the Job's `backoffLimit`, `fail`s the job: the Job
controller deletes its pod, the job leaves the cluster unfinished, and all the work it kept is
lost with it. A preemption (`Replay.stop`) meanwhile deletes the pod: its restart never comes.
"""

from __future__ import annotations

import heapq
import math
from dataclasses import replace

from reclaimer.simulate.jobs import RESTART, Event, EventKind, Replay
from reclaimer.simulate.sharing.restarts import CrashLoop, crashed, fails


def oom_kill(replay: Replay, job: int, now: float) -> None:
    """Out of GPU memory on a time-sliced GPU: the container dies, the pod stays (module doc)."""
    run = replay.runs[job]
    progress = replay.settle(job, run, now)
    lost = replay.lost_work(job, progress)
    where = (run.placement.node, run.placement.devices[0])
    replay.on_device[where].remove(job)
    replay.changed.add(where)
    wait, loop = crashed(replay.crash_loops.get(job, CrashLoop()), now)
    replay.crash_loops[job] = loop
    replay.oom_kills += 1
    replay.guaranteed_oom_kills += replay.jobs.queues[job] in replay.guaranteed
    replay.tally.lost_gpu_s += float(replay.jobs.gpus[job]) * lost
    replay.base[job] = progress - lost
    replay.epoch[job] += 1  # its completion is off until it runs again
    replay.runs[job] = replace(
        run, started=now, base=replay.base[job], lag=0.0, rate=0.0, since=now, warm_at=math.inf
    )
    if replay.on_event is not None:
        replay.on_event(Event(EventKind.OOM_KILLED, now, job, progress, lost))
    heapq.heappush(replay.heap, (now + wait, RESTART, job, replay.epoch[job]))


def restart(replay: Replay, job: int, now: float) -> None:
    """The kubelet's back-off is over: the container restarts in its pod, or the job fails."""
    if fails(replay.crash_loops[job].restarts, replay.settings.backoff_limit):
        fail(replay, job, now)
        return
    cold = replay.cold_start(job)
    if replay.on_event is not None:
        run = replay.runs[job]
        event = Event(EventKind.RESTARTED, now, job, run.base)
        replay.on_event(replace(event, placement=run.placement, cold_start=cold))
    replay.warm_after(job, now, cold)


def fail(replay: Replay, job: int, now: float) -> None:
    """The Job controller fails the job: its pod is deleted and it never comes back. Its wait
    is counted as it stands; the work it kept is lost."""
    progress = replay.stop(job, now)
    queue = replay.jobs.queues[job]
    replay.tally.waited(queue, replay.waited[job])
    kept = replay.usage.work_seconds(job, 0.0, progress)
    replay.tally.lost_gpu_s += float(replay.jobs.gpus[job]) * kept
    replay.failed_jobs += 1
    replay.guaranteed_failed_jobs += queue in replay.guaranteed
    if replay.on_event is not None:
        replay.on_event(Event(EventKind.FAILED, now, job, progress))
