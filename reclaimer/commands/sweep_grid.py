"""A capacity sweep's settings: each memory reading and each pool draw, and the replays they need.

A *setting* is one `--memory-peak-gib` value and one pool draw (`--pool-seeds`, else `--pool-seed`);
on a node list that gives device memory no value applies (the bytes replay as measured,
`sim_sharing.memory.peak_for`), so the settings are the pool draws alone, with no value; the sweep
replays every strategy at every capacity and seed once per setting and judges each setting on its
own (`report.sensitivity`). Replays that cannot differ between settings run once: `none`,
`allocation` and `threshold` replay every GPU whole, and neither the memory series (read only on
time-sliced GPUs: OOM kills, the pool's readings, the reshape planner's peaks) nor the pool's draw
reaches a replay without a pool, so their replay at a capacity and seed in the first setting stands
for every setting (`replay_of`; a test holds `none` to it).
"""

from __future__ import annotations

import argparse
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from itertools import groupby

from reclaimer.commands import memory_flags
from reclaimer.commands.replay_pool import Outcome, Task
from reclaimer.simulate.replay import SLICING
from reclaimer.simulate.strategies import Strategy
from reclaimer.simulate.sweep import CapacityPoint


@dataclass(frozen=True)
class Setting:
    memory_gib: float | None  # the `--memory-peak-gib` value (None: no `--memory`, or memory
    # replayed as measured)
    pool_seed: int


def settings_of(memory_gibs: Sequence[float] | None, pool_seeds: Sequence[int]) -> list[Setting]:
    """Every (memory value, pool seed) pair, by memory value, then pool seed."""
    memories: Sequence[float | None] = memory_gibs or [None]
    return [Setting(m, p) for m in memories for p in pool_seeds]


def settings(args: argparse.Namespace, measured: bool = False) -> list[Setting]:
    """The flags' settings: `--memory-peak-gib` values (with `--memory`, on nodes whose memory
    is not `measured`) x pool seeds."""
    memory = args.memory_peak_gib if args.memory is not None and not measured else None
    return settings_of(memory, args.pool_seeds or (args.pool_seed,))


def sweep_tasks(
    args: argparse.Namespace, points: Sequence[CapacityPoint], measured: bool = False
) -> list[Task]:
    """Every strategy (`none` first) at every capacity and seed, in every setting."""
    chosen = memory_flags.default_strategies(args)
    names = (Strategy.NONE, *(s for s in chosen if s is not Strategy.NONE))
    seeds = args.seeds or (args.seed,)
    # fewest GPUs first: those replays take longest, so the pool ends evenly
    return [
        in_setting(Task(s, p.gpus, p.scale, seed), setting)
        for setting in settings(args, measured)
        for p in points
        for s in names
        for seed in seeds
    ]


def report_tasks(args: argparse.Namespace, gpus: int, measured: bool = False) -> list[Task]:
    """The report's replays, with their timelines: every strategy, in the (only) setting."""
    first = settings(args, measured)[0]
    return [
        in_setting(Task(s, gpus, args.capacity_scale, args.seed, timeline=True), first)
        for s in memory_flags.default_strategies(args)
    ]


def in_setting(task: Task, setting: Setting) -> Task:
    return replace(task, memory_gib=setting.memory_gib, pool_seed=setting.pool_seed)


def setting_of(task: Task) -> Setting:
    return Setting(task.memory_gib, task.pool_seed)


def replay_of(task: Task, first: Setting) -> Task:
    """The replay that stands for `task`: its own with a pool, else the first setting's."""
    return task if task.strategy in SLICING else in_setting(task, first)


def run_once(
    tasks: Sequence[Task], first: Setting, run: Callable[[list[Task]], list[Outcome]]
) -> list[Outcome]:
    """Every task's outcome, each distinct replay (`replay_of`) run once, by `run`."""
    distinct = list(dict.fromkeys(replay_of(t, first) for t in tasks))
    done = dict(zip(distinct, run(distinct), strict=True))
    return [done[replay_of(t, first)] for t in tasks]


def distinct(tasks: Sequence[Task], first: Setting) -> int:
    """How many replays `run_once` runs for `tasks`."""
    return len({replay_of(t, first) for t in tasks})


def by_setting(
    pairs: Sequence[tuple[Task, dict[str, object]]],
) -> list[tuple[Setting, list[tuple[Task, dict[str, object]]]]]:
    """The sweep's (task, result) pairs, setting by setting, in the order they were made."""
    order = list(dict.fromkeys(setting_of(t) for t, _ in pairs))
    key = order.index
    ordered = sorted(pairs, key=lambda p: key(setting_of(p[0])))
    return [(s, list(group)) for s, group in groupby(ordered, key=lambda p: setting_of(p[0]))]
