"""How often a GenTD26 pod's neighbour is busy while the pod is (not a test).

    .venv/bin/python bench/cobusy.py [--data TRACES] [--seeds 8]

Reads alibaba-gentd26's `pod_gpu_duty_cycle.csv.gz` as the replay does (`trace.read_profiles`:
57 s samples, gaps carried forward) and prints P(neighbour busy | pod busy) over every ordered
pair of pods (`reclaimer.simulate.sharing.cobusy.neighbour_busy_share`), for the drawable profiles
(the ones openb jobs replay) and for every pod:
- at the trace's own timestamps (the pods as they were sampled together; what `--profile-offsets
  arrival` keeps for jobs that arrive at the same time of day);
- at random offsets drawn as the replay draws them (`--profile-offsets random`), one line per
  seed summarised as a range, and the average independent offsets give (`independent_share`);
for busy meaning any demand (above 0, as `ls_cobusy_share` counts it) and at or above the
planner's idle threshold (5%). Then the fleet's mean busy share and the same shares after
`--utilization-mean` 0.30 and 0.50 (`reclaimer.simulate.sharing.load.scale_to_mean`). Takes a few
seconds.
"""

from __future__ import annotations

import argparse
import os
from dataclasses import replace
from pathlib import Path

import numpy as np

from reclaimer.simulate.sharing.cobusy import (
    independent_share,
    neighbour_busy_share,
    offset_moments,
    trace_moments,
)
from reclaimer.simulate.sharing.load import fleet_mean, scale_to_mean
from reclaimer.simulate.trace import IntArray, Profiles, read_profiles
from reclaimer.traces.catalog import default_cache_dir

DATA = default_cache_dir(os.environ, Path.home())  # where `gpu-reclaimer traces fetch` stores
IDLE_THRESHOLD = 0.05  # `Policy().threshold`


def shares(profiles: Profiles, pods: IntArray, seeds: int) -> str:
    together = neighbour_busy_share(*trace_moments(profiles, pods))
    span = int(profiles.lengths[pods].max())
    drawn = []
    for seed in range(seeds):
        rng = np.random.default_rng(seed)
        offsets = (rng.random(len(pods)) * profiles.lengths[pods]).astype(np.int64)
        busy = offset_moments(profiles, pods, offsets, span)
        drawn.append(neighbour_busy_share(busy, np.ones_like(busy)))
    return (
        f"trace timestamps {together:.3f}  random offsets {min(drawn):.3f}-{max(drawn):.3f} "
        f"(seeds 0-{seeds - 1})  independent {independent_share(profiles, pods):.3f}"
    )


def report(profiles: Profiles, seeds: int) -> list[str]:
    everyone = np.arange(len(profiles.lengths), dtype=np.int64)
    at_threshold = replace(
        profiles, values=np.where(profiles.values >= IDLE_THRESHOLD, profiles.values, 0.0)
    )
    lines = []
    for label, view in (("busy > 0", profiles), (f"busy >= {IDLE_THRESHOLD}", at_threshold)):
        for who, pods in (("drawable", profiles.drawable()), ("all pods", everyone)):
            lines.append(f"{label:<12} {who} ({len(pods)}): {shares(view, pods, seeds)}")
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=DATA, help=f"traces folder (default {DATA})")
    parser.add_argument("--seeds", type=int, default=8, help="random-offset draws (default 8)")
    args = parser.parse_args()
    profiles = read_profiles(args.data / "alibaba-gentd26" / "pod_gpu_duty_cycle.csv.gz")
    pool = profiles.drawable()
    nonzero = float(np.mean([(profiles.values[profiles.starts[i] :][: profiles.lengths[i]] > 0)
                             .mean() for i in pool]))  # fmt: skip
    print(f"fleet mean busy share {fleet_mean(profiles):.4f} (drawable profiles, each alike); "
          f"nonzero samples {nonzero:.4f}")  # fmt: skip
    print("\n".join(report(profiles, args.seeds)))
    for target in (0.30, 0.50):
        moved = scale_to_mean(profiles, target)
        print(f"\n--utilization-mean {target}: fleet mean {fleet_mean(moved):.4f}")
        print("\n".join(report(moved, args.seeds)[:1]))


if __name__ == "__main__":
    main()
