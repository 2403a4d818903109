"""A job's life in a replay, as plain data: its changes of state and its runs.

An `Event` is one change of a job's state (`EventKind`: queued, started, preempted, resumed,
finished, and on a time-sliced GPU OOM-killed, restarted or failed), with the job's progress then;
the replay emits one to an optional listener at each change. A `Run` is one stay of a job on a GPU,
from its start to its stop or end: its progress at a time `now` is its progress when it started
plus the time since, less the time it made no progress (`lag`, settled whenever its rate of
progress on a time-sliced GPU changes, and what it loses at its current `rate` since `since`).
Neither holds replay state; `jobs.Replay` creates and updates them.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from enum import StrEnum

from reclaimer.model import Job, Pod
from reclaimer.simulate.scheduler import Placement


class EventKind(StrEnum):
    QUEUED = "queued"
    STARTED = "started"
    PREEMPTED = "preempted"
    RESUMED = "resumed"  # a suspended victim goes back to its queue
    FINISHED = "finished"
    OOM_KILLED = "oom_killed"  # out of GPU memory on a time-sliced GPU; its pod stays bound
    RESTARTED = "restarted"  # the kubelet restarted an OOM-killed container in its pod
    FAILED = "failed"  # its pod's restarts reached the Job's backoffLimit: it left, work lost


@dataclass(frozen=True)
class Event:
    """One change of a job's state; `progress` is its progress then (seconds of its profile)."""

    kind: EventKind
    at: float
    job: int
    progress: float
    lost_seconds: float = 0.0  # PREEMPTED: the work it must do again
    suspended: bool = False  # PREEMPTED: held by the reclaimer (else re-queued at once)
    wrongful: bool = False  # PREEMPTED: busy again within the horizon (`sim_results`)
    placement: Placement | None = None  # STARTED, RESTARTED: where its pod runs
    cold_start: float = 0.0  # STARTED, RESTARTED: seconds it loads before making progress


@dataclass
class Run:
    placement: Placement
    started: float
    base: float  # progress at the start of this run
    job: Job
    pods: tuple[Pod, ...]
    lag: float = 0.0  # seconds of run time that made no progress (time-slicing), settled
    rate: float = 1.0  # progress per second since `since`
    since: float = 0.0
    warm_at: float = math.inf  # when it began making progress (inf: restarting or loading)

    def progress(self, now: float) -> float:
        return self.base + (now - self.started) - self.lag - (1.0 - self.rate) * (now - self.since)
