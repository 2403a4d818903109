"""Simulator benchmark (not a test): the whole alibaba-openb trace under every policy.

    .venv/bin/python bench/simulate_bench.py [--capacity-scale 0.007] [--policy-file FILE]
                                             [--seed 0] [--data TRACES]
                                             [--strategies none,timeslice,forecast]
                                             [--memory-peak-gib 16] [--no-memory] [--digest]
                                             [--no-cold-start]

Replays the 149-day trace (utilization, GPU memory and model load times from alibaba-gentd26)
once per policy through the same code path as `gpu-reclaimer simulate` (time-sliced pool at its
CLI defaults: half the nodes of each size, 2 replicas, 5% switch overhead; restarts and resumes
load their model, as `simulate` does unless told `--no-cold-start`), and prints one JSON line per
policy: the simulator's result with its wall seconds, plus CPU seconds and peak RSS. Budget
(issues 3 and 21): one 149-day replay in under 2 minutes. Scales: 0.005 keeps 30 GPUs, 0.007 40,
0.009 58 (`reclaimer.simulate.sweep.capacity_points`).

`--digest` adds `events` and `events_sha256`: every change of every job's state (`Event`, its
times and progress at full float precision) hashed in order, so a change meant to make the
replay faster, not different, can show that it left every event as it was, not only the
rounded figures of the result (run it before and after the change, and compare).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import resource
import time
from pathlib import Path
from types import MappingProxyType

from reclaimer.commands.sharing_flags import DEFAULT_POOL_SHARE, DEFAULT_REPLICAS
from reclaimer.commands.simulate import DEFAULT_CAPACITY_SCALE
from reclaimer.policy.settings import load_policy
from reclaimer.simulate.jobs import Event
from reclaimer.simulate.planning import planner_for
from reclaimer.simulate.replay import SimSettings, simulate
from reclaimer.simulate.sharing.memory import DEFAULT_PEAK_GIB, read_memory
from reclaimer.simulate.sharing.restarts import ColdStarts, read_cold_starts
from reclaimer.simulate.strategies import Strategy
from reclaimer.simulate.trace import read_nodes, read_pods, read_profiles
from reclaimer.traces.catalog import default_cache_dir

DATA = default_cache_dir(os.environ, Path.home())  # where `gpu-reclaimer traces fetch` stores


class EventDigest:
    """Every event of a replay hashed in order (`--digest`): `repr` keeps each float exact."""

    def __init__(self) -> None:
        self._sha = hashlib.sha256()
        self.count = 0

    def __call__(self, event: Event) -> None:
        self._sha.update(repr(event).encode())
        self.count += 1

    def hexdigest(self) -> str:
        return self._sha.hexdigest()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--capacity-scale", type=float, default=DEFAULT_CAPACITY_SCALE)
    parser.add_argument("--policy-file", type=Path)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument(
        "--data", type=Path, default=DATA, help="traces folder (default %(default)s)"
    )
    parser.add_argument("--strategies", default=",".join(s.value for s in Strategy))
    parser.add_argument("--memory-peak-gib", type=float, default=DEFAULT_PEAK_GIB)
    parser.add_argument("--no-memory", action="store_true", help="replay without GPU memory")
    parser.add_argument("--digest", action="store_true", help="hash every event (module doc)")
    parser.add_argument("--no-cold-start", action="store_true", help="restarts load nothing")
    args = parser.parse_args()
    policy = load_policy(args.policy_file.read_text() if args.policy_file else "")
    jobs = read_pods(args.data / "alibaba-openb" / "openb_pod_list_default.csv")
    nodes = read_nodes(
        args.data / "alibaba-openb" / "openb_node_list_gpu_node.csv", args.capacity_scale
    )
    gentd = args.data / "alibaba-gentd26"
    profiles = read_profiles(gentd / "pod_gpu_duty_cycle.csv.gz")
    memory = (
        None
        if args.no_memory
        else read_memory(gentd / "pod_gpu_memory_used_bytes.csv.gz", profiles, args.memory_peak_gib)
    )
    cold = (
        ColdStarts()
        if args.no_cold_start
        else read_cold_starts(gentd / "basemodel_update_latency_anon.csv.gz")
    )
    planner = planner_for(policy)
    for name in (Strategy(s) for s in args.strategies.split(",")):
        settings = SimSettings(
            strategy=name,
            seed=args.seed,
            checkpoint_seconds=policy.checkpoint_interval_seconds,
            queue_shares=MappingProxyType(dict(policy.queue_shares)),
            replicas=DEFAULT_REPLICAS,
            pool_share=DEFAULT_POOL_SHARE,
            cold_starts=cold,
        )
        digest = EventDigest()
        wall, cpu = time.perf_counter(), time.process_time()
        result = simulate(
            jobs,
            nodes,
            profiles,
            settings,
            planner=planner,
            memory=memory,
            on_event=digest if args.digest else None,
        )
        hashed = {"events": digest.count, "events_sha256": digest.hexdigest()}
        out = (
            result.to_json()
            | (hashed if args.digest else {})
            | {
                "wall_seconds": round(time.perf_counter() - wall, 2),
                "cpu_seconds": round(time.process_time() - cpu, 2),
                "peak_rss_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss // 1024,
                "capacity_gpus": int(nodes.gpus.sum()),
            }
        )
        print(json.dumps(out), flush=True)


if __name__ == "__main__":
    main()
