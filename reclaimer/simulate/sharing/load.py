"""How much the replay's jobs load their GPUs, and when: profile offsets and the fleet's mean.

**Offsets** (`--profile-offsets`). A job without a profile of its own replays a drawn GenTD26
profile (`simulate.usage`); where in it the job starts decides which of its samples meet its
neighbours' on a shared GPU. GenTD26's pods serve one application (the data README), so they
tend to be busy together: on the shared subset a pod's neighbour is busy 58% of the time the pod
is, against 31% for the same pods at independent random offsets (`simulate.cobusy`,
`bench/cobusy.py`). `arrival` (the default) keeps that: a job arriving at time of day `h` (its
`creation_time` mod one day) starts at the sample whose own time of day (`timestamp_anon` mod
one day) is `h`, so jobs that arrive at the same time of day sit at the same moment of the trace.
`timestamp_anon` is shifted and openb's `creation_time` counts from an origin of its own, so
neither is a wall-clock time; what is kept is the profiles' alignment with each other, all that
co-location reads. A time of day the profile does not cover (GenTD26's span 22.8 hours) is read
modulo its length, as the profile cycles. A job drifts off the trace's clock by whatever holds
its progress back (its wait, work redone, slowdown) and by 1.2 hours each time its profile
wraps. `random` is a seeded uniform offset, the replay's only mode before. The profile a seed
draws is the same either way.

**Mean** (`--utilization-mean X`). Every profile is transformed to a fleet mean busy share of X:
the mean over the drawable profiles (`Profiles.drawable`, each as likely to be drawn) of each
one's mean utilization. Two steps, both monotone in each sample's value:
1. *Scale*: every nonzero sample is multiplied by one common factor, capped at 1, solved so the
   mean is X. Zeros stay zeros, so every idle window keeps its place and length, and the busy
   samples keep their order. This reaches at most the share of nonzero samples (0.3155 on the
   shared subset), where every busy sample is 1.
2. *Fill*: beyond that, idle runs (zeros in a row within a profile) become busy at 1, shortest
   first: every run shorter than a length G, and the runs of exactly G at the one level that
   lands on X (so the order of equal runs does not matter).
Why it is fair: the load level changes while the trace's time structure (when each pod works and
rests, how pods line up) is kept, as load-scaling methods for trace replay aim to (Zakay and
Feitelson, "Workload resampling for performance evaluation of parallel job schedulers", ICPE
2013; Sajal et al., "TraceScaler", 2025). Every strategy replays the same transformed profiles.
Scaling up raises the demand that time-sliced pods contend with, the side that costs sharing.
The shortest idle runs go first, which keeps the long idle windows that reclaim feeds on: above
0.3155 that favours the reclaiming strategies over filling idle time at random
(docs/backtest.md says so). Samples crossing the idle threshold (5%) change what the planner
counts as work; memory series are not touched. Pure.
"""

from __future__ import annotations

from dataclasses import replace
from enum import StrEnum

import numpy as np

from reclaimer.simulate.trace import FloatArray, IntArray, Profiles

DAY_SECONDS = 86_400.0
_BISECTIONS = 100  # halvings of the scale factor's bracket: past float precision


class ProfileOffsets(StrEnum):
    ARRIVAL = "arrival"
    RANDOM = "random"


def arrival_offsets(profiles: Profiles, which: IntArray, arrival: FloatArray) -> IntArray:
    """Per job, the sample of its profile (`which`) whose own time of day is its arrival's."""
    origins = (
        np.zeros(len(profiles.lengths)) if not profiles.origins else np.array(profiles.origins)
    )
    own_clock = np.mod(arrival - origins[which], DAY_SECONDS)
    index = np.floor(own_clock / profiles.step).astype(np.int64)
    result: IntArray = index % profiles.lengths[which]
    return result


def _weights(profiles: Profiles) -> FloatArray:
    """Per sample, its weight in the fleet mean: 1 / (length x drawable profiles), else 0."""
    pool = profiles.drawable()
    per_profile = np.zeros(len(profiles.lengths))
    per_profile[pool] = 1.0 / (profiles.lengths[pool] * len(pool))
    result: FloatArray = np.repeat(per_profile, profiles.lengths)
    return result


def fleet_mean(profiles: Profiles) -> float:
    """The mean over the drawable profiles of each one's mean utilization."""
    return float(_weights(profiles) @ profiles.values)


def scale_to_mean(profiles: Profiles, target: float) -> Profiles:
    """The profiles transformed to a fleet mean busy share of `target` (module doc)."""
    if not 0.0 < target <= 1.0:
        raise ValueError(f"a mean busy share must be in (0, 1], got {target}")
    weights, values = _weights(profiles), profiles.values
    reach = float(weights[values > 0].sum())  # the mean with every busy sample at 1
    if 0.0 < target <= reach:
        return replace(profiles, values=_scaled(values, weights, target))
    return replace(profiles, values=_filled(profiles, weights, target))


def _scaled(values: FloatArray, weights: FloatArray, target: float) -> FloatArray:
    """Nonzero samples times the common factor that makes the weighted mean `target`."""

    def mean_at(factor: float) -> float:
        return float(weights @ np.minimum(values * factor, 1.0))

    low, high = 0.0, 1.0 / float(values[values > 0].min())  # at `high` every busy sample is 1
    for _ in range(_BISECTIONS):
        middle = (low + high) / 2
        low, high = (middle, high) if mean_at(middle) < target else (low, middle)
    result: FloatArray = np.minimum(values * high, 1.0)
    return result


def _idle_runs(profiles: Profiles) -> tuple[IntArray, IntArray]:
    """Every run of zeros within a profile: its first flat index and its length."""
    starts: list[int] = []
    lengths: list[int] = []
    for first, n in zip(profiles.starts.tolist(), profiles.lengths.tolist(), strict=True):
        idle = np.concatenate([[False], profiles.values[first : first + n] == 0, [False]])
        edges = np.flatnonzero(np.diff(idle.astype(np.int8)))
        starts += (first + edges[::2]).tolist()
        lengths += (edges[1::2] - edges[::2]).tolist()
    return np.array(starts, dtype=np.int64), np.array(lengths, dtype=np.int64)


def _filled(profiles: Profiles, weights: FloatArray, target: float) -> FloatArray:
    """Every busy sample at 1, and the shortest idle runs busy until the mean is `target`."""
    values: FloatArray = (profiles.values > 0).astype(np.float64)
    starts, lengths = _idle_runs(profiles)
    cumulative = np.concatenate([[0.0], np.cumsum(weights)])
    mass = cumulative[starts + lengths] - cumulative[starts]  # each run's weight in the mean
    reached = float(weights @ values)
    for length in np.unique(lengths).tolist():
        runs = lengths == length
        gain = float(mass[runs].sum())
        level = 1.0 if gain == 0 else min(1.0, (target - reached) / gain)
        for s in starts[runs].tolist():
            values[s : s + length] = level
        reached += level * gain
        if reached >= target:
            break
    return values
