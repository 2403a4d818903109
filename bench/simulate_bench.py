"""Simulator benchmark (not a test): the whole alibaba-openb trace under every policy.

    .venv/bin/python bench/simulate_bench.py [--capacity-scale 0.007] [--policy-file FILE]
                                             [--seed 0] [--data ../shared/data]

Replays the 149-day trace (utilization from alibaba-gentd26) once per policy through the same
code path as `gpu-reclaimer simulate`, and prints one JSON line per policy: the simulator's
result with its wall seconds, plus CPU seconds and peak RSS. Budget (issue 3): the whole trace
in under 2 minutes on 2 cores.
"""

from __future__ import annotations

import argparse
import json
import resource
import time
from pathlib import Path
from types import MappingProxyType

from reclaimer.commands.simulate import DEFAULT_CAPACITY_SCALE
from reclaimer.policy.settings import load_policy
from reclaimer.simulate.planning import planner_for
from reclaimer.simulate.replay import SimSettings, simulate
from reclaimer.simulate.strategies import Strategy
from reclaimer.simulate.trace import read_nodes, read_pods, read_profiles

DATA = Path(__file__).resolve().parent.parent.parent / "shared" / "data"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--capacity-scale", type=float, default=DEFAULT_CAPACITY_SCALE)
    parser.add_argument("--policy-file", type=Path)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--data", type=Path, default=DATA)
    args = parser.parse_args()
    policy = load_policy(args.policy_file.read_text() if args.policy_file else "")
    jobs = read_pods(args.data / "alibaba-openb" / "openb_pod_list_default.csv")
    nodes = read_nodes(
        args.data / "alibaba-openb" / "openb_node_list_gpu_node.csv", args.capacity_scale
    )
    profiles = read_profiles(args.data / "alibaba-gentd26" / "pod_gpu_duty_cycle.csv.gz")
    planner = planner_for(policy)
    for name in Strategy:
        settings = SimSettings(
            strategy=name,
            seed=args.seed,
            checkpoint_seconds=policy.checkpoint_interval_seconds,
            queue_shares=MappingProxyType(dict(policy.queue_shares)),
        )
        wall, cpu = time.perf_counter(), time.process_time()
        result = simulate(jobs, nodes, profiles, settings, planner=planner)
        out = result.to_json() | {
            "wall_seconds": round(time.perf_counter() - wall, 2),
            "cpu_seconds": round(time.process_time() - cpu, 2),
            "peak_rss_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss // 1024,
            "capacity_gpus": int(nodes.gpus.sum()),
        }
        print(json.dumps(out), flush=True)


if __name__ == "__main__":
    main()
