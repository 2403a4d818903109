"""A replay over time, for the report: GPUs allocated and busy, preemptions, and every wait.

`record_run` replays once (`run_replay`) while a `Timeline` collects the job events: each run
segment (a job's start to its completion, preemption, OOM kill, failure or the end of the
replay; an OOM-killed pod keeps its GPU, so its kill opens the next segment, which makes progress
only once its container is back and its cold start over) and each preemption, with whether it
was wrongful (the replay's own verdict, carried by the event), and each OOM kill on a
time-sliced GPU; the jobs' slowdowns are the replay's own. The
replay's span is cut into `bins` equal bins; a bin's allocated GPUs are the segments' GPUs x
overlap / bin width, its busy GPUs the same weighted by the job's profile over the part of its
progress that fell in the bin (`Usage.busy_seconds`, the rule the replay's totals use), so the
bins add up to the run's `gpu_hours_allocated` and `gpu_hours_busy`. The waits are the replay's
tally, per queue. Pure and deterministic, as the replay is.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from reclaimer.report.replay_data import RunRecord
from reclaimer.simulate.jobs import Event, EventKind
from reclaimer.simulate.replay import replay_result, replay_span, run_replay
from reclaimer.simulate.settings import SimSettings
from reclaimer.simulate.sharing.usage import Usage
from reclaimer.simulate.strategies import ReplayPlanner
from reclaimer.simulate.trace import FloatArray, Jobs, Nodes, Profiles

DEFAULT_BINS = 300
ENDS = (EventKind.FINISHED, EventKind.PREEMPTED, EventKind.OOM_KILLED, EventKind.FAILED)


@dataclass
class Timeline:
    """Collects segments and preemptions from a replay's events (`on_event`)."""

    # job: (at, progress, warm: when it begins making progress)
    opened: dict[int, tuple[float, float, float]] = field(default_factory=dict)
    segments: list[tuple[int, float, float, float, float]] = field(default_factory=list)
    preempted_at: list[float] = field(default_factory=list)
    wrongful_at: list[float] = field(default_factory=list)
    oom_at: list[tuple[float, int]] = field(default_factory=list)  # (at, job)

    def __call__(self, event: Event) -> None:
        if event.kind is EventKind.STARTED:
            self.opened[event.job] = (event.at, event.progress, event.at + event.cold_start)
        elif event.kind is EventKind.RESTARTED:
            started, progress, _ = self.opened[event.job]
            self.opened[event.job] = (started, progress, event.at + event.cold_start)
        elif event.kind in ENDS:
            started, progress, warm = self.opened.pop(event.job)
            self.segments.append((event.job, started, progress, event.at, warm))
        if event.kind is EventKind.OOM_KILLED:
            self.oom_at.append((event.at, event.job))
            kept = event.progress - event.lost_seconds  # the pod holds its GPU, no progress yet
            self.opened[event.job] = (event.at, kept, math.inf)
        if event.kind is EventKind.PREEMPTED:
            self.preempted_at.append(event.at)
            if event.wrongful:
                self.wrongful_at.append(event.at)

    def binned(self, jobs: Jobs, usage: Usage, edges: FloatArray) -> tuple[FloatArray, FloatArray]:
        """Mean GPUs allocated and busy in each bin between consecutive `edges`."""
        allocated = np.zeros(len(edges) - 1)
        busy = np.zeros(len(edges) - 1)
        for job, start, progress, stop, warm in self.segments:
            gpus = float(jobs.gpus[job])
            inside = edges[(edges > start) & (edges < stop)]
            cuts = np.concatenate([[start], inside, [stop]])
            bins = np.clip(np.searchsorted(edges, cuts[:-1], side="right") - 1, 0, len(busy) - 1)
            for k, a, b in zip(bins, cuts[:-1], cuts[1:], strict=True):
                allocated[k] += gpus * (b - a)
                done = usage.busy_seconds(
                    job, progress + max(a - warm, 0.0), progress + max(b - warm, 0.0)
                )
                busy[k] += gpus * done
        width = np.diff(edges)
        return allocated / width, busy / width


def record_run(
    jobs: Jobs,
    nodes: Nodes,
    profiles: Profiles,
    settings: SimSettings,
    planner: ReplayPlanner,
    *,
    bins: int = DEFAULT_BINS,
    memory: FloatArray | None = None,
) -> RunRecord:
    """Replay once and keep what the report draws; the result is `simulate`'s own."""
    timeline = Timeline()
    replay = run_replay(
        jobs, nodes, profiles, settings, planner=planner, on_event=timeline, memory=memory
    )
    begin, end = replay_span(jobs)
    result = replay_result(replay)
    edges = np.linspace(begin, max(end, begin + 1.0), bins + 1)
    allocated, busy = timeline.binned(jobs, replay.usage, edges)
    preemptions, _ = np.histogram(timeline.preempted_at, edges)
    wrongful, _ = np.histogram(timeline.wrongful_at, edges)
    ooms, _ = np.histogram([at for at, _ in timeline.oom_at], edges)
    guaranteed = [at for at, j in timeline.oom_at if jobs.queues[j] in replay.guaranteed]
    guaranteed_ooms, _ = np.histogram(guaranteed, edges)
    return RunRecord(
        strategy=settings.strategy.value,
        gpus=int(nodes.gpus.sum()),
        seed=settings.seed,
        result=result.to_json(),
        waits={q: tuple(w) for q, w in sorted(replay.tally.waits.items())},
        begin=begin,
        bin_seconds=float(edges[1] - edges[0]),
        allocated_gpus=tuple(float(x) for x in allocated),
        busy_gpus=tuple(float(x) for x in busy),
        preemptions=tuple(int(x) for x in preemptions),
        wrongful=tuple(int(x) for x in wrongful),
        oom_kills=tuple(int(x) for x in ooms),
        guaranteed_oom_kills=tuple(int(x) for x in guaranteed_ooms),
        slowdowns={q: tuple(s) for q, s in sorted(replay.slowdowns.items())},
    )
