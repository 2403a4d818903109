"""`simulate --capacity-sweep` and `simulate --report`: compare strategies, at many capacities.

`--capacity-sweep` replays the trace under each of `--strategies` (with `none` always among them,
the baseline) at each capacity of the range (`reclaimer.simulate.sweep` says how the default
range is chosen; `--capacities` overrides it) and each of `--seeds`, over `--jobs` processes with
a progress line on stderr, and reports per strategy the fewest GPUs at which, on every seed,
every guaranteed queue's own wait p95 (with `--slo-pooled`, their pooled p95 instead) stays
within `--slo`, their slowdown p95 within `--max-slowdown` (default 1.10), no guaranteed job
is OOM-killed or fails (its Job's `backoffLimit`) and the guaranteed LS pods' co-busy share
stays within `--max-ls-cobusy` (default 0.05), and the GPUs it saves against `none`. The JSON's
`rule` names the rule in force; under `--slo-pooled` each strategy's per-queue verdict is
printed beside the pooled one (JSON `per_queue`), as a pooled p95 can keep the SLO while a small
queue starves. The JSON's `load` says what load the replays ran at (`--profile-offsets`,
`--utilization-mean`).
With several `--memory-peak-gib` values or `--pool-seeds`, the sweep runs once per setting
(`commands.sweep_grid`) and adds what changes across them (`report.sensitivity`): with
`--memory` scaled, `memory_sensitivity` and `break_even_gib`; with several pool draws,
`pool_draws`. On a node list that gives device memory the bytes replay as measured, in one
setting per pool draw, and neither memory key is written (no value was swept).
`--strategies` defaults to every strategy, `timeslice-tuned` only with `--memory`.
`--report FILE.html` writes the page of `reclaimer.report.html_report`: the strategies replayed
once more at `--capacity-scale` and `--seed` with their timelines, and the sweep when there is
one. Both compare strategies, so `--strategy` (one run) goes with neither. Bad flags exit 2.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from collections.abc import Mapping
from pathlib import Path

from reclaimer.commands import replay_pool, sweep_grid, sweep_output
from reclaimer.commands.flag_values import number_in, positive_count, seed_list
from reclaimer.commands.replay_pool import Inputs, Task
from reclaimer.policy.settings import Policy
from reclaimer.report import figures, sensitivity
from reclaimer.report.replay_data import (
    CapacityResult,
    PolicyVerdict,
    Rule,
    RunRecord,
    SweepSummary,
)
from reclaimer.simulate import sweep
from reclaimer.simulate.replay import SLICING
from reclaimer.simulate.settings import SimSettings
from reclaimer.simulate.sharing.load import fleet_mean
from reclaimer.simulate.strategies import Strategy
from reclaimer.simulate.trace import FloatArray, Jobs, Nodes, Profiles, TraceError, read_nodes
from reclaimer.units import parse_duration

DEFAULT_SLO = "10m"


def _slo(text: str) -> float:
    try:
        seconds = parse_duration(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from exc
    if seconds <= 0:
        raise argparse.ArgumentTypeError(f"the SLO must be longer than 0, got {text!r}")
    return seconds


_slowdown = number_in(lambda v: v >= 1.0, "a slowdown is at least 1 (dedicated)")
_share = number_in(lambda v: 0.0 <= v <= 1.0, "a share must be in [0, 1]")


def _strategies(text: str) -> tuple[Strategy, ...]:
    names = [part.strip() for part in text.split(",") if part.strip()]
    known = ", ".join(s.value for s in Strategy)
    if not names or any(n not in {s.value for s in Strategy} for n in names):
        raise argparse.ArgumentTypeError(f"expected strategies among {known}, got {text!r}")
    return tuple(s for s in Strategy if s.value in names)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    group = parser.add_argument_group("comparing strategies (--capacity-sweep, --report)")
    group.add_argument(
        "--capacity-sweep",
        action="store_true",
        help="replay at a range of capacities: the fewest GPUs keeping --slo, per strategy",
    )
    group.add_argument(
        "--capacities",
        help="GPU counts (38,40,48) or a range (30-72) instead of the default range "
        "(half the trace's peak concurrent demand up to the peak)",
    )
    group.add_argument(
        "--slo",
        type=_slo,
        help=f"every guaranteed queue's own wait p95 goal (default {DEFAULT_SLO})",
    )
    group.add_argument(
        "--max-slowdown",
        type=_slowdown,
        default=sweep.DEFAULT_MAX_SLOWDOWN,
        help="guaranteed jobs' slowdown p95 goal, run time over dedicated run time "
        f"(default {sweep.DEFAULT_MAX_SLOWDOWN})",
    )
    group.add_argument(
        "--max-ls-cobusy",
        type=_share,
        default=sweep.DEFAULT_MAX_LS_COBUSY,
        help="guaranteed LS pods' co-busy share goal: of their busy time, the share with a busy "
        f"neighbour on their GPU (default {sweep.DEFAULT_MAX_LS_COBUSY}; 1 turns it off)",
    )
    group.add_argument(
        "--slo-pooled",
        action="store_true",
        help="hold the guaranteed queues' pooled wait p95 to --slo instead of each queue's own "
        "(the per-queue verdicts are printed beside)",
    )
    group.add_argument(
        "--strategies",
        type=_strategies,
        help="strategies to compare (default all, timeslice-tuned only with --memory; the sweep "
        "always adds none)",
    )
    group.add_argument("--seeds", type=seed_list, help="sweep seeds, e.g. 0,1,2 (default --seed)")
    group.add_argument(
        "--pool-seeds",
        type=seed_list,
        help="pool draws to sweep, e.g. 0,1,2: the sweep runs once per draw (default --pool-seed)",
    )
    group.add_argument(
        "--jobs",
        type=positive_count,
        help="replays at once (default: the CPUs this process may use)",
    )
    group.add_argument("--report", type=Path, help="write a self-contained HTML report here")


def wanted(args: argparse.Namespace) -> bool:
    return bool(args.capacity_sweep) or args.report is not None


def check_flags(args: argparse.Namespace) -> str | None:
    """What is wrong with the flags, before anything is read or replayed; None when nothing."""
    swept = (args.capacities, args.slo, args.seeds, args.pool_seeds)
    if not wanted(args):
        if args.strategy is None:
            return "--strategy is required (or --capacity-sweep / --report to compare several)"
        if any(flag is not None for flag in swept):
            return "--capacities, --slo, --seeds and --pool-seeds go with --capacity-sweep"
        return None
    if args.strategy is not None:
        return "--strategy picks one run; --capacity-sweep and --report compare --strategies"
    if not args.capacity_sweep and any(flag is not None for flag in swept):
        return "--capacities, --slo, --seeds and --pool-seeds go with --capacity-sweep"
    if args.report is not None and len(sweep_grid.settings(args)) > 1:
        return "--report replays one setting: give one --memory-peak-gib value and one pool seed"
    if args.report is not None:
        try:
            figures.require_matplotlib()
        except figures.ReportUnavailable as exc:
            return str(exc)
        if not args.report.parent.is_dir():
            return f"--report: no such directory {args.report.parent}"
    return None


def _points(
    args: argparse.Namespace, jobs: Jobs, every_node: Nodes
) -> tuple[tuple[sweep.CapacityPoint, ...], str]:
    if args.capacities is not None:
        try:
            chosen = sweep.chosen_points(sweep.capacity_points(every_node), args.capacities)
        except ValueError as exc:
            raise ValueError(f"--capacities: {exc}") from exc
        return chosen, sweep.describe_range(chosen, None)
    peak = sweep.peak_demand(jobs)
    chosen = sweep.default_points(sweep.capacity_points(every_node, math.ceil(peak)), peak)
    return chosen, sweep.describe_range(chosen, peak)


def _number(run: dict[str, object], key: str) -> float:
    value = run[key]
    if not isinstance(value, int | float):
        raise TypeError(f"a replay's result has no {key}: {value!r}")
    return float(value)


def _p95(run: dict[str, object]) -> float:
    return _number(run, "guaranteed_wait_p95_s")


def _point(task: Task, run: dict[str, object]) -> sweep.RunPoint:
    return sweep.RunPoint(
        task.gpus,
        task.scale,
        task.seed,
        _p95(run),
        worst_queue=_worst_queue(run),
        slowdown=_number(run, "guaranteed_slowdown_p95"),
        oom_kills=int(_number(run, "guaranteed_oom_kills")),
        ls_cobusy=_number(run, "ls_cobusy_share"),
        failed_jobs=int(_number(run, "guaranteed_failed_jobs")),
    )


def _worst_queue(run: dict[str, object]) -> tuple[str, float]:
    worst = run["worst_guaranteed_queue"]
    if not isinstance(worst, dict):
        raise TypeError(f"a replay's result has no worst_guaranteed_queue: {worst!r}")
    return str(worst["queue"]), float(worst["wait_p95_s"])


def _summary(
    args: argparse.Namespace, tasks: list[Task], runs: list[dict[str, object]], note: str
) -> SweepSummary:
    slo = args.slo or parse_duration(DEFAULT_SLO)
    points: dict[str, list[sweep.RunPoint]] = {}
    for task, run in zip(tasks, runs, strict=True):
        points.setdefault(task.strategy.value, []).append(_point(task, run))

    def judged(rule: Rule) -> tuple[PolicyVerdict, ...]:
        per_strategy: dict[str, tuple[CapacityResult, ...]] = {
            name: sweep.capacity_results(
                mine, slo, args.max_slowdown, rule=rule, max_ls_cobusy=args.max_ls_cobusy
            )
            for name, mine in points.items()
        }
        return sweep.note_empty_pools(sweep.verdicts(per_strategy), _empty_pools(tasks, runs))

    rule = Rule.POOLED if args.slo_pooled else Rule.PER_QUEUE
    seeds = tuple(sorted({t.seed for t in tasks}))
    beside = judged(Rule.PER_QUEUE) if rule is Rule.POOLED else ()
    return SweepSummary(slo, seeds, note, judged(rule), rule, beside)


def _empty_pools(tasks: list[Task], runs: list[dict[str, object]]) -> dict[str, list[int]]:
    """Per time-slicing strategy, the capacities where its pool came out empty (for
    `timeslice-tuned`, no node at all: one it keeps whole is in its `tuned_replicas`)."""
    empty: dict[str, list[int]] = {}
    for task, run in zip(tasks, runs, strict=True):
        sliced = _number(run, "timesliced_gpus") > 0 or bool(run.get("tuned_replicas"))
        if task.strategy in SLICING and not sliced:
            empty.setdefault(task.strategy.value, []).append(task.gpus)
    return empty


def _tasks(args: argparse.Namespace, jobs: Jobs, every_node: Nodes) -> tuple[list[Task], str]:
    """The sweep's replays (if any), then the report's (if any); raises ValueError on a bad
    `--capacities`."""
    tasks: list[Task] = []
    note = ""
    measured = every_node.measured_memory  # no `--memory-peak-gib` value applies
    if args.capacity_sweep:
        points, note = _points(args, jobs, every_node)
        tasks = sweep_grid.sweep_tasks(args, points, measured)
    if args.report is not None:
        gpus = int(sweep.nodes_at(every_node, args.capacity_scale).gpus.sum())
        tasks += sweep_grid.report_tasks(args, gpus, measured)
    return tasks, note


def run(
    args: argparse.Namespace,
    policy: Policy,
    jobs: Jobs,
    profiles: Profiles,
    sharing: tuple[SimSettings, Mapping[float | None, FloatArray]],
) -> int:
    """The sweep and/or the report (the flags passed `check_flags`); `sharing` is the
    time-slicing settings and each `--memory-peak-gib` value's memory series, or the series as
    measured under None (`commands.memory_flags.read_memories`)."""
    try:
        every_node = read_nodes(args.nodes)
        tasks, note = _tasks(args, jobs, every_node)
    except (TraceError, ValueError) as exc:
        print(f"gpu-reclaimer simulate: {exc}", file=sys.stderr)
        return 2
    inputs = Inputs(
        jobs,
        every_node,
        profiles,
        policy,
        args.interval,
        args.idle_window,
        sharing=sharing[0],
        memory=sharing[1].get(None),
        memories={gib: m for gib, m in sharing[1].items() if gib is not None},
        forecaster=args.forecaster,
    )
    first = sweep_grid.settings(args, every_node.measured_memory)[0]
    progress = replay_pool.Progress(sys.stderr, sweep_grid.distinct(tasks, first))
    workers = args.jobs or replay_pool.default_jobs()
    outcomes = sweep_grid.run_once(
        tasks, first, lambda once: replay_pool.run_tasks(once, inputs, workers, progress)
    )
    swept = [(t, o) for t, o in zip(tasks, outcomes, strict=True) if isinstance(o, dict)]
    records = [o for o in outcomes if isinstance(o, RunRecord)]
    sweeps = [
        sensitivity.SettingSweep(
            setting.memory_gib,
            setting.pool_seed,
            _summary(args, [t for t, _ in pairs], [o for _, o in pairs], note),
            [o for _, o in pairs],
        )
        for setting, pairs in sweep_grid.by_setting(swept)
    ]
    out: dict[str, object] = sensitivity.as_json(sweeps) if sweeps else {}
    if sweeps:
        out["load"] = {
            "profile_offsets": sharing[0].profile_offsets.value,
            "utilization_mean": round(fleet_mean(profiles), 4),
        }
    if args.report is not None:
        sweep_output.write_report(args, records, sweeps[0].summary if sweeps else None)
        out["report"] = str(args.report)
    if not sweeps:
        out["runs"] = [dict(r.result) | {"gpus": r.gpus, "seed": r.seed} for r in records]
    print(json.dumps(out) if args.json else sweep_output.text(sweeps, records, args.report))
    return 0
