"""`gpu-reclaimer simulate`: replay an alibaba-openb trace under one reclaim policy.

The shell of the simulator: it reads the files, loads the policy, measures wall time, draws a
progress bar on stderr when stderr is a terminal, and prints the result (a table, or only JSON
with `--json`). Bad input (unreadable or malformed files, an invalid policy) exits 2 with a
message on stderr.

`--capacity-scale` keeps that fraction of the trace's nodes (of each GPU count). The trace never
holds more than 65.6 of its 6,212 GPUs at once (1.06%), so at full size nothing ever waits and no
reclaim policy can make a difference; the default 0.007 keeps 8 nodes (4 x 2 and 4 x 8 GPUs, 40
GPUs), which the trace fills at its peaks: LS pods wait (p95 about 23 minutes with no reclaim)
and 8-GPU pods starve behind backfill. Reclaim cannot end that starvation: in the trace's last
weeks every 8-GPU node holds LS, guaranteed or burstable pods that run for weeks, none of them
reclaimable (burstable wait p95 is the same 11.5 days under every policy), and a node lock for
the longest-waiting big job, as Volcano's opt-in `sla` plugin does, was measured to make every
queue wait far longer (LS p95 from 23 minutes to 14 hours with no reclaim), so the scheduler
model stays pure backfill, as in Volcano's default configuration. `--policy-file` is the
controller's policy YAML; its `checkpointInterval` applies to every policy (work lost on
preemption), its `queueShares` set the guaranteed queues' deserved shares.

Time-slicing (`timeslice`, `timeslice-tuned`, `forecast`): `--pool-share` (default 0.5) of the
nodes of each GPU count, drawn by `--pool-seed`, form the time-sliced pool (`sim_pool.members`), at
`--replicas` (default 2) per GPU (`forecast` starts whole and reshapes, or there with
`--forecast-start replicas`; `timeslice-tuned` sets its own per GPU model, `sim_pool.tuned`);
`--contention` picks how a time-sliced GPU's time is
divided (`fair`, the default, or `pessimistic`: `sim_sharing.contention`), and `--switch-overhead`
(default 0.05, `fair` only: given with `pessimistic` it exits 2) is the share of a GPU's time
lost while two or more pods have work on it. `--memory` replays each job's GPU memory
(GenTD26's `pod_gpu_memory_used_bytes` format; `commands.memory_flags`: `--memory-peak-gib`, the
bound a sharing pod's request gives its memory, the pool's draw `--pool-seed`),
`--anonymized-gib` is the memory of a GPU model the trace anonymizes (default 16). When the node
list gives each node's device memory (a `gpu_memory_mib` column, as `export-history` writes it),
the bytes are replayed as they are and `--memory-peak-gib` does not apply (`sim_sharing.memory`; a
list of values is refused there); the result's `memory_replay` says which rule held (`scaled`, `as
measured`, or `none` without `--memory`, when no job is ever OOM-killed). A pool that comes out
empty (`sim_pool.members.empty_pool` says why) refuses `--strategy timeslice` and `timeslice-tuned`
(exit 2: they would replay `none`) and is said on stderr for `--strategy forecast`, which then
replays reclaim only.

Load (every strategy, `simulate.load`): `--profile-offsets arrival` (the default) starts each
drawn profile at its job's arrival time of day on the profile's own clock, so jobs that share a
GPU keep the correlation the trace's pods have; `random` at a seeded offset. `--utilization-mean
X` transforms every profile to a fleet mean busy share of X before any replay (without it, the
trace's own mean).

Forecaster: `--forecaster NAME` has the planner act on any method `forecast-eval` scores
(`reclaimer.forecast.forecaster.METHODS`: the default `pooled-logistic`, `burst-rate`, or a
baseline rule such as `decayed-p95`), so the replay judges each by the same plans: its wrongful
stops, lost GPU-hours and waits. It applies to the strategies that forecast (`forecast`).

Restarts (`sim_sharing.restarts`): an OOM-killed container restarts in its pod, on the same node and
device, after the kubelet's back-off, until its Job's `backoffLimit` (6) fails the job. Every
such restart, and every start of a job that ran before, first loads its model: a cold start drawn
from `--cold-start` (GenTD26's `basemodel_update_latency` format, milliseconds; default: the
fetched trace's), or none with `--no-cold-start`.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from dataclasses import replace
from pathlib import Path
from types import MappingProxyType
from typing import TextIO

from reclaimer.commands import memory_flags, sharing_flags, simulate_sweep, trace_paths
from reclaimer.commands.flag_values import number_in
from reclaimer.forecast.forecaster import DEFAULT_METHOD, METHODS
from reclaimer.policy.settings import Policy, PolicyError, load_policy
from reclaimer.simulate.planning import planner_for
from reclaimer.simulate.pool.members import empty_pool
from reclaimer.simulate.replay import SLICING, simulate
from reclaimer.simulate.results import SimResult
from reclaimer.simulate.sharing.contention import (
    Contention,
)
from reclaimer.simulate.sharing.load import scale_to_mean
from reclaimer.simulate.sharing.restarts import ColdStarts, read_cold_starts
from reclaimer.simulate.strategies import Strategy
from reclaimer.simulate.trace import (
    FloatArray,
    Jobs,
    Nodes,
    TraceError,
    read_nodes,
    read_pods,
    read_profiles,
)
from reclaimer.units import parse_duration

DEFAULT_CAPACITY_SCALE = 0.007
BAR_WIDTH = 40


def _duration(text: str) -> float:
    try:
        return parse_duration(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from exc


_scale = number_in(lambda v: 0.0 < v <= 1.0, "must be in (0, 1]")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--pods", type=Path, help="openb pod list CSV (default: fetched trace)")
    parser.add_argument("--nodes", type=Path, help="openb node list CSV (default: fetched trace)")
    parser.add_argument(
        "--utilization", type=Path, help="gentd26-format utilization CSV (default: fetched trace)"
    )
    trace_paths.add_traces_dir(parser)
    parser.add_argument(
        "--strategy", choices=[p.value for p in Strategy], help="reclaim policy (one run)"
    )
    parser.add_argument("--policy-file", type=Path, help="reclaim policy YAML (default: Policy())")
    parser.add_argument("--seed", type=int, default=0, help="seed for profile assignment")
    parser.add_argument(
        "--capacity-scale",
        type=_scale,
        default=DEFAULT_CAPACITY_SCALE,
        help=f"fraction of the trace's nodes to keep (default {DEFAULT_CAPACITY_SCALE})",
    )
    parser.add_argument(
        "--interval", type=_duration, default=300.0, help="control interval (default 5m)"
    )
    parser.add_argument(
        "--idle-window",
        type=_duration,
        default=1800.0,
        help="threshold policy: idle this long before eviction (default 30m)",
    )
    parser.add_argument("--json", action="store_true", help="print only JSON on stdout")
    parser.add_argument(
        "--forecaster",
        choices=list(METHODS),
        default=DEFAULT_METHOD,
        help=f"the method the planner acts on, any forecast-eval scores (default {DEFAULT_METHOD})",
    )
    sharing_flags.add_arguments(parser)
    simulate_sweep.add_arguments(parser)


def _empty_pool(args: argparse.Namespace, jobs: Jobs, nodes: Nodes) -> str | None:
    """What to say when a time-slicing strategy's pool comes out empty: `timeslice` and
    `timeslice-tuned` would replay `none` (refused), `forecast` reclaim only (said, replayed)."""
    if Strategy(args.strategy) not in SLICING:
        return None
    reason = empty_pool(jobs, nodes, args.pool_share)
    if reason is None:
        return None
    if args.strategy != Strategy.FORECAST.value:
        return f"{reason}: {args.strategy} would time-slice nothing and replay none"
    return f"{reason}: forecast replays reclaim only, time-slicing nothing"


def _sharing_problem(args: argparse.Namespace) -> str | None:
    if args.switch_overhead is not None and args.contention == Contention.PESSIMISTIC.value:
        return (
            "--switch-overhead is the fair model's; --contention pessimistic already charges "
            "every neighbour's demand in full"
        )
    return memory_flags.problem(args, simulate_sweep.wanted(args))


def _policy(path: Path | None) -> Policy:
    if path is None:
        return Policy()
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise PolicyError([f"<file>: cannot read {path}: {exc.strerror or exc}"]) from exc
    return load_policy(text)


class ProgressBar:
    def __init__(self, stream: TextIO, label: str) -> None:
        self.stream, self.label = stream, label

    def __call__(self, fraction: float) -> None:
        done = int(BAR_WIDTH * min(max(fraction, 0.0), 1.0))
        bar = "#" * done + "." * (BAR_WIDTH - done)
        self.stream.write(f"\r{self.label} [{bar}] {fraction:6.1%}")
        self.stream.flush()

    def close(self) -> None:
        self.stream.write("\r" + " " * (len(self.label) + BAR_WIDTH + 12) + "\r")
        self.stream.flush()


def _table(result: dict[str, object]) -> str:
    width = max(len(k) for k in result)
    return "\n".join(
        f"{k.ljust(width)}  {json.dumps(v) if isinstance(v, dict) else v}"
        for k, v in result.items()
    )


def run(args: argparse.Namespace) -> int:
    files = ("pods", "nodes", "utilization", *(() if args.no_cold_start else ("cold_start",)))
    problem = trace_paths.fill_defaults(args, files)
    problem = problem or _sharing_problem(args) or simulate_sweep.check_flags(args)
    if problem:
        print(f"gpu-reclaimer simulate: {problem}", file=sys.stderr)
        return 2
    try:
        policy = _policy(args.policy_file)
        jobs = read_pods(args.pods)
        nodes = read_nodes(args.nodes, args.capacity_scale)
        profiles = read_profiles(args.utilization)
        memories = memory_flags.read_memories(args, profiles, nodes)
        if args.utilization_mean is not None:
            profiles = scale_to_mean(profiles, args.utilization_mean)
        cold = ColdStarts() if args.no_cold_start else read_cold_starts(args.cold_start)
    except (TraceError, PolicyError) as exc:
        print(f"gpu-reclaimer simulate: {exc}", file=sys.stderr)
        return 2
    if (moot := memory_flags.moot(args, nodes)) is not None:
        print(f"gpu-reclaimer simulate: {moot}", file=sys.stderr)
        return 2
    sharing = replace(sharing_flags.sharing_settings(args), cold_starts=cold)
    if simulate_sweep.wanted(args):
        return simulate_sweep.run(args, policy, jobs, profiles, (sharing, memories))
    memory: FloatArray | None = next(iter(memories.values()), None)
    if (empty := _empty_pool(args, jobs, nodes)) is not None:
        print(f"gpu-reclaimer simulate: {empty}", file=sys.stderr)
        if args.strategy != Strategy.FORECAST.value:
            return 2
    settings = replace(
        sharing,
        strategy=Strategy(args.strategy),
        seed=args.seed,
        interval_seconds=args.interval,
        idle_window_seconds=args.idle_window,
        checkpoint_seconds=policy.checkpoint_interval_seconds,
        queue_shares=MappingProxyType(dict(policy.queue_shares)),
    )
    bar = ProgressBar(sys.stderr, f"simulate {args.strategy}") if sys.stderr.isatty() else None
    started = time.monotonic()
    result: SimResult = simulate(
        jobs,
        nodes,
        profiles,
        settings,
        planner=planner_for(policy, forecaster=args.forecaster),
        on_progress=bar,
        memory=memory,
    )
    wall = round(time.monotonic() - started, 2)
    if bar is not None:
        bar.close()
    out = result.to_json() | {"wall_seconds": wall}
    print(json.dumps(out) if args.json else _table(out))
    return 0
