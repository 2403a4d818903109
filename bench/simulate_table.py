"""The backtest's capacity table (not a test): every policy at every capacity scale and seed.

    .venv/bin/python bench/simulate_table.py [--scales 0.005,0.006,...,0.010] [--seeds 0,1,2,3]
                                             [--strategies none,allocation,threshold,forecast]
                                             [--policy-file FILE] [--data TRACES]
                                             [--jsonl FILE]

Replays the whole alibaba-openb trace (utilization from alibaba-gentd26) through the same code
path as `gpu-reclaimer simulate`, once per capacity scale, policy and seed, one after the other
(about 8 minutes on 2 cores), and prints docs/backtest.md's Markdown tables: the pooled guaranteed
wait p95 (`guaranteed_wait_p95_s`) per seed, then preemptions and lost GPU-hours (means over
the seeds). The last column checks the default policy (`forecast`) against `none` as issue 14
asks: never worse by more than 25% or 60 s (whichever is larger), and better wherever `none`
waits more than 10 minutes (when both were run). `--jsonl` also writes every run's full result,
one JSON per line.
"""

from __future__ import annotations

import argparse
import json
import os
import time
from pathlib import Path
from types import MappingProxyType
from typing import Any

from reclaimer.policy.settings import Policy, load_policy
from reclaimer.simulate.planning import planner_for
from reclaimer.simulate.replay import simulate
from reclaimer.simulate.settings import SimSettings
from reclaimer.simulate.strategies import Strategy
from reclaimer.simulate.trace import read_nodes, read_pods, read_profiles
from reclaimer.traces.catalog import default_cache_dir

DATA = default_cache_dir(os.environ, Path.home())  # where `gpu-reclaimer traces fetch` stores
SCALES = "0.005,0.006,0.007,0.008,0.009,0.010"
Row = dict[str, Any]


def run_all(args: argparse.Namespace, policy: Policy) -> list[Row]:
    jobs = read_pods(args.data / "alibaba-openb" / "openb_pod_list_default.csv")
    profiles = read_profiles(args.data / "alibaba-gentd26" / "pod_gpu_duty_cycle.csv.gz")
    planner = planner_for(policy)
    rows: list[Row] = []
    for scale in (float(s) for s in args.scales.split(",")):
        nodes = read_nodes(args.data / "alibaba-openb" / "openb_node_list_gpu_node.csv", scale)
        for name in (Strategy(p) for p in args.strategies.split(",")):
            for seed in (int(s) for s in args.seeds.split(",")):
                settings = SimSettings(
                    strategy=name,
                    seed=seed,
                    checkpoint_seconds=policy.checkpoint_interval_seconds,
                    queue_shares=MappingProxyType(dict(policy.queue_shares)),
                )
                started = time.perf_counter()
                result = simulate(jobs, nodes, profiles, settings, planner=planner)
                wall = round(time.perf_counter() - started, 2)
                row = result.to_json() | {"wall_seconds": wall}
                rows.append(row | {"scale": scale, "gpus": int(nodes.gpus.sum()), "seed": seed})
    return rows


def verdict(none: float, ours: list[float]) -> str:
    """Issue 14's bound for the default policy against `none`, over the seeds."""
    bound = max(1.25 * none, none + 60.0)
    if any(p > bound for p in ours):
        return f"**worse than {bound:,.0f}**"
    if none > 600.0 and any(p >= none for p in ours):
        return "**not better**"
    return "better" if none > 600.0 else f"within {bound:,.0f}"


def _cell(values: list[float]) -> str:
    return " / ".join(f"{v:,.0f}" for v in values)


def tables(rows: list[Row]) -> str:
    scales = sorted({(r["scale"], r["gpus"]) for r in rows})
    names = [p.value for p in Strategy if any(r["strategy"] == p.value for r in rows)]

    def pick(scale: float, policy: str, key: str) -> list[float]:
        return [float(r[key]) for r in rows if r["scale"] == scale and r["strategy"] == policy]

    head = "| scale (GPUs) | " + " | ".join(f"`{n}`" for n in names) + " | default vs `none` |"
    lines = [head, "| --- |" + " ---: |" * len(names) + " --- |"]
    for scale, gpus in scales:
        cells = [_cell(pick(scale, n, "guaranteed_wait_p95_s")) for n in names]
        none = pick(scale, Strategy.NONE.value, "guaranteed_wait_p95_s")
        ours = pick(scale, Strategy.FORECAST.value, "guaranteed_wait_p95_s")
        judged = verdict(max(none), ours) if none and ours else "-"
        lines.append(f"| {scale:g} ({gpus}) | " + " | ".join(cells) + f" | {judged} |")
    lines += ["", "| scale (GPUs) | " + " | ".join(f"`{n}`" for n in names) + " |"]
    lines.append("| --- |" + " ---: |" * len(names))
    for scale, gpus in scales:
        cells = []
        for n in names:
            pre, lost = pick(scale, n, "preemptions"), pick(scale, n, "lost_gpu_hours")
            cells.append(f"{sum(pre) / len(pre):,.0f} / {sum(lost) / len(lost):,.1f}")
        lines.append(f"| {scale:g} ({gpus}) | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scales", default=SCALES)
    parser.add_argument("--seeds", default="0,1,2,3")
    parser.add_argument("--strategies", default=",".join(p.value for p in Strategy))
    parser.add_argument("--policy-file", type=Path)
    parser.add_argument(
        "--data", type=Path, default=DATA, help="traces folder (default %(default)s)"
    )
    parser.add_argument("--jsonl", type=Path)
    args = parser.parse_args()
    policy = load_policy(args.policy_file.read_text() if args.policy_file else "")
    rows = run_all(args, policy)
    if args.jsonl:
        args.jsonl.write_text("".join(json.dumps(r) + "\n" for r in rows))
    print(tables(rows))


if __name__ == "__main__":
    main()
