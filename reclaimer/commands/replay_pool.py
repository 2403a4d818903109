"""Many replays at once: one per (strategy, capacity, seed, setting), over a pool of processes.

A replay is single-threaded and CPU-bound, so a sweep runs them in worker processes (`--jobs`,
default every CPU this process may use). Each worker gets the trace once (`_start`) and then
replays tasks; results come back as they finish and `on_done` hears of each (the progress line).
With one job everything runs in this process, in order. Results are returned in task order, so
the output does not depend on which worker finished first. A task's setting
(`commands.sweep_grid`) is its memory reading, one of `Inputs.memories`, and its pool draw.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ProcessPoolExecutor, as_completed
from dataclasses import dataclass, field, replace
from types import MappingProxyType
from typing import TextIO

from reclaimer.forecast.forecaster import DEFAULT_METHOD
from reclaimer.policy.settings import Policy
from reclaimer.report.replay_data import RunRecord
from reclaimer.simulate.planning import planner_for
from reclaimer.simulate.replay import simulate
from reclaimer.simulate.settings import SimSettings
from reclaimer.simulate.strategies import ReplayPlanner, Strategy
from reclaimer.simulate.sweep import nodes_at
from reclaimer.simulate.timeline import record_run
from reclaimer.simulate.trace import FloatArray, Jobs, Nodes, Profiles


@dataclass(frozen=True)
class Inputs:
    """What every replay shares: the trace, every node of the list, the policy, the timings."""

    jobs: Jobs
    every_node: Nodes
    profiles: Profiles
    policy: Policy
    interval_seconds: float
    idle_window_seconds: float
    sharing: SimSettings = field(default_factory=lambda: SimSettings(Strategy.NONE))  # its
    # time-slicing fields (replicas, pool share, switch overhead, anonymized GiB) apply
    memory: FloatArray | None = None  # GiB per profile sample (`sim_sharing.memory`), if given: the
    # bytes as measured, on a node list that gives device memory, where no value applies
    # per `--memory-peak-gib` value, its memory series (a task's `memory_gib` picks one)
    memories: Mapping[float, FloatArray] = field(default_factory=dict)
    forecaster: str = DEFAULT_METHOD  # which method answers the planner (`simulate --forecaster`)


@dataclass(frozen=True)
class Task:
    strategy: Strategy
    gpus: int
    scale: float
    seed: int
    timeline: bool = False  # keep what the report draws (a `RunRecord`), not only the result
    memory_gib: float | None = None  # which of `Inputs.memories` (None: `Inputs.memory`)
    pool_seed: int = 0  # which draw of the nodes forms the pool (`sim_pool.members`)


Outcome = dict[str, object] | RunRecord
_worker: list[tuple[Inputs, ReplayPlanner]] = []  # this process's inputs, set once by `_start`


def default_jobs() -> int:
    """The CPUs this process may run on (its affinity), at least one."""
    return max(1, len(os.sched_getaffinity(0)))


def _start(inputs: Inputs) -> None:
    _worker[:] = [(inputs, planner_for(inputs.policy, forecaster=inputs.forecaster))]


def _replay(task: Task) -> Outcome:
    inputs, planner = _worker[0]
    nodes = nodes_at(inputs.every_node, task.scale)
    memory = inputs.memory if task.memory_gib is None else inputs.memories[task.memory_gib]
    settings = replace(
        inputs.sharing,
        strategy=task.strategy,
        seed=task.seed,
        pool_seed=task.pool_seed,
        interval_seconds=inputs.interval_seconds,
        idle_window_seconds=inputs.idle_window_seconds,
        checkpoint_seconds=inputs.policy.checkpoint_interval_seconds,
        queue_shares=MappingProxyType(dict(inputs.policy.queue_shares)),
    )
    if task.timeline:
        return record_run(inputs.jobs, nodes, inputs.profiles, settings, planner, memory=memory)
    started = time.perf_counter()
    result = simulate(inputs.jobs, nodes, inputs.profiles, settings, planner=planner, memory=memory)
    wall = round(time.perf_counter() - started, 2)
    extra = {"gpus": task.gpus, "capacity_scale": task.scale, "seed": task.seed}
    return result.to_json() | {"wall_seconds": wall} | extra


def run_tasks(
    tasks: Sequence[Task],
    inputs: Inputs,
    jobs: int,
    on_done: Callable[[Task, Outcome], None],
) -> list[Outcome]:
    """Replay every task; results in task order."""
    if jobs <= 1 or len(tasks) <= 1:
        _start(inputs)
        outcomes = []
        for task in tasks:
            outcomes.append(_replay(task))
            on_done(task, outcomes[-1])
        return outcomes
    done: dict[int, Outcome] = {}
    workers = min(jobs, len(tasks))
    with ProcessPoolExecutor(workers, initializer=_start, initargs=(inputs,)) as pool:
        futures = {pool.submit(_replay, task): i for i, task in enumerate(tasks)}
        for future in as_completed(futures):
            i = futures[future]
            done[i] = future.result()
            on_done(tasks[i], done[i])
    return [done[i] for i in range(len(tasks))]


class Progress:
    """`sweep 12/48: forecast at 40 GPUs, seed 1: p95 622 s` on stderr, one line per replay
    (rewritten in place on a terminal)."""

    def __init__(self, stream: TextIO, total: int) -> None:
        self.stream, self.total, self.count = stream, total, 0
        self.in_place = stream.isatty()

    def __call__(self, task: Task, outcome: Outcome) -> None:
        self.count += 1
        result = outcome.result if isinstance(outcome, RunRecord) else outcome
        p95 = result.get("guaranteed_wait_p95_s")
        what = "report run" if task.timeline else "sweep"
        memory = "" if task.memory_gib is None else f", {task.memory_gib:g} GiB"
        pool = f", pool seed {task.pool_seed}" if task.pool_seed else ""
        line = (
            f"{what} {self.count}/{self.total}: {task.strategy.value} at {task.gpus} GPUs, "
            f"seed {task.seed}{memory}{pool}: guaranteed p95 {p95:,.0f} s"
            if isinstance(p95, int | float)
            else f"{what} {self.count}/{self.total}"
        )
        end = "" if self.in_place and self.count < self.total else "\n"
        self.stream.write(("\r\033[K" if self.in_place else "") + line + end)
        self.stream.flush()
