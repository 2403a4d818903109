"""Utilization of simulated jobs: each job replays one measured profile, indexed by its progress.

A job whose name is a profile's (an `export-history` trace: the pod measured) replays that profile
from its first sample: its own measured utilization. Every other job is given a profile by a
seeded choice (the same choice with or without own profiles, so a trace without any replays as
before) and a starting offset: the sample at its arrival's time of day on the profile's own
clock when its arrival is given (`simulate.load.arrival_offsets`), else a seeded one. Its
utilization after `p`
seconds of progress (work done, which a preemption rolls back) is the profile sample at
`offset + floor(p / step)`, cycling through the profile. Because utilization follows progress, a
job that re-runs lost work replays the same usage, and "would the victim have been busy again?"
is answered by reading its own profile just after the preemption point.

A job's *work* is the time it spends at or above the idle threshold: a sample below it is a job
waiting (for a user, for data, for requests), not computing. `work_seconds` is what a preemption
costs the victim (the work since its last checkpoint, which it must do again); idle time is not
redone, since a resumed job does not wait again for what already came. `nonzero_seconds` is its
time with any demand at all (`simulate.cobusy`'s busy time).

Everything is precomputed as numpy arrays so lookups are vectorized: prefix sums (busy and work
seconds of a run segment in O(1)), a trailing maximum over the idle-culler window, and a leading
maximum over the forecast horizon (wrongful-preemption check).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from numpy.lib.stride_tricks import sliding_window_view

from reclaimer.simulate.sharing.load import arrival_offsets
from reclaimer.simulate.trace import FloatArray, IntArray, Profiles


def _circular_max(values: FloatArray, window: int, leading: bool) -> FloatArray:
    """Max over `window` samples ending at (trailing) or starting at (leading) each index."""
    window = max(1, min(window, len(values)))
    if leading:
        ext = np.concatenate([values, values[: window - 1]])
    else:
        ext = np.concatenate([values[len(values) - window + 1 :], values])
    result: FloatArray = sliding_window_view(ext, window).max(axis=1)
    return result


@dataclass(frozen=True)
class Usage:
    """Profiles assigned to jobs; all positions are in samples of `step` seconds."""

    step: float
    values: FloatArray
    prefix: FloatArray  # per profile, its prefix sums back to back (length + 1 each)
    working: FloatArray  # 1.0 where a sample is at or above the threshold (work), else 0.0
    work_prefix: FloatArray  # prefix sums of `working`, laid out like `prefix`
    trailing_max: FloatArray  # max of the idle window ending at each sample
    leading_max: FloatArray  # max of the horizon starting at each sample
    start: IntArray  # per job: first sample of its profile in `values`
    length: IntArray  # per job: its profile's length
    prefix_start: IntArray  # per job: its profile's first entry in `prefix`
    offset: IntArray  # per job: sample its progress 0 maps to
    own: int = 0  # jobs replaying their own measured profile
    memory: FloatArray | None = (
        None  # GiB per sample, laid out like `values` (`sim_sharing.memory`)
    )
    nonzero: FloatArray | None = None  # 1.0 where a sample is above 0 (any demand), else 0.0
    nonzero_prefix: FloatArray | None = None  # prefix sums of `nonzero`, laid out like `prefix`
    memory_share: FloatArray | None = None  # per job, the most of its GPU's memory it may hold
    # (`sim_sharing.share_memory`; inf: no bound); None: no job is bounded

    def position(self, job: IntArray, progress: FloatArray) -> IntArray:
        """Flat index into `values` of each job's sample at `progress` seconds of work."""
        local = (self.offset[job] + np.floor(progress / self.step).astype(np.int64)) % self.length[
            job
        ]
        result: IntArray = self.start[job] + local
        return result

    def utilization(self, job: IntArray, progress: FloatArray) -> FloatArray:
        result: FloatArray = self.values[self.position(job, progress)]
        return result

    def memory_gib(self, job: IntArray, progress: FloatArray) -> FloatArray:
        """GiB each job holds at `progress` (0 without a memory series)."""
        if self.memory is None:
            return np.zeros(len(job))
        result: FloatArray = self.memory[self.position(job, progress)]
        return result

    def memory_bound(self, job: IntArray, device_gib: FloatArray) -> FloatArray:
        """Most GiB each job may hold on a GPU of `device_gib` GiB (one per job): its share of
        it for a bounded GPU-sharing pod (`sim_sharing.share_memory`), inf otherwise."""
        if self.memory_share is None:
            return np.full(len(job), np.inf)
        result: FloatArray = self.memory_share[job] * device_gib
        return result

    def memory_peak(
        self, job: int, progress_from: float, progress_to: float, device_gib: float = math.inf
    ) -> float:
        """Most GiB the job held between two progress points on a GPU of `device_gib` GiB, within
        its `memory_bound` there (0 without a memory series)."""
        if self.memory_share is not None:
            bound = float(self.memory_share[job]) * device_gib
            return min(self._series_peak(job, progress_from, progress_to), bound)
        return self._series_peak(job, progress_from, progress_to)

    def _series_peak(self, job: int, progress_from: float, progress_to: float) -> float:
        if self.memory is None or progress_to < progress_from:
            return 0.0
        length, start = int(self.length[job]), int(self.start[job])
        a = int(self.offset[job]) + math.floor(progress_from / self.step)
        b = int(self.offset[job]) + math.floor(progress_to / self.step)
        own = self.memory[start : start + length]
        if b - a + 1 >= length:
            return float(own.max())
        a, b = a % length, b % length
        if a <= b:
            return float(own[a : b + 1].max())
        return float(max(own[a:].max(), own[: b + 1].max()))

    def idle_through_window(
        self, job: IntArray, progress: FloatArray, threshold: float
    ) -> FloatArray:
        """True (1.0) where the idle window ending at `progress` stayed below `threshold`."""
        result: FloatArray = (self.trailing_max[self.position(job, progress)] < threshold).astype(
            np.float64
        )
        return result

    def busy_within_horizon(self, job: int, progress: float, threshold: float) -> bool:
        """Would the job have reached `threshold` from `progress` to the end of the horizon?"""
        pos = self.position(np.array([job]), np.array([progress]))
        return bool(self.leading_max[pos[0]] >= threshold)

    def _cumulative(
        self, job: int, samples: float, prefix: FloatArray, values: FloatArray
    ) -> float:
        length = int(self.length[job])
        whole, rest = divmod(samples, length)
        index = int(rest)
        base = int(self.prefix_start[job])
        total = prefix[base + length]
        partial = prefix[base + index] + (rest - index) * values[self.start[job] + index]
        return float(whole * total + partial)

    def _integral(
        self,
        job: int,
        progress_from: float,
        progress_to: float,
        series: tuple[FloatArray, FloatArray],
    ) -> float:
        prefix, values = series
        offset = float(self.offset[job])
        a = offset + progress_from / self.step
        b = offset + progress_to / self.step
        span = self._cumulative(job, b, prefix, values) - self._cumulative(job, a, prefix, values)
        return span * self.step

    def busy_seconds(self, job: int, progress_from: float, progress_to: float) -> float:
        """Utilization-weighted seconds of the run segment between two progress points."""
        return self._integral(job, progress_from, progress_to, (self.prefix, self.values))

    def work_seconds(self, job: int, progress_from: float, progress_to: float) -> float:
        """Seconds at or above the threshold between two progress points: the work done."""
        return self._integral(job, progress_from, progress_to, (self.work_prefix, self.working))

    def nonzero_seconds(self, job: int, progress_from: float, progress_to: float) -> float:
        """Seconds with any demand (above 0) between two progress points."""
        if self.nonzero is None or self.nonzero_prefix is None:
            raise ValueError("usage built without its nonzero series (`assign_usage` builds it)")
        return self._integral(job, progress_from, progress_to, (self.nonzero_prefix, self.nonzero))


def assign_usage(
    profiles: Profiles,
    n_jobs: int,
    seed: int,
    idle_window_seconds: float,
    horizon_seconds: float,
    *,
    threshold: float,
    job_names: Sequence[str] = (),
    arrival: FloatArray | None = None,
) -> Usage:
    """Give each job its own profile (by name) or one by a seeded choice (same seed, same
    assignment), starting at its `arrival`'s time of day when given, else at a seeded offset.

    `threshold` is the idle threshold: samples at or above it are work.
    """
    which, offsets, own = _assign(profiles, n_jobs, seed, job_names, arrival)
    lengths = profiles.lengths[which]
    idle_k = max(1, math.ceil(idle_window_seconds / profiles.step))
    horizon_k = max(1, math.ceil(horizon_seconds / profiles.step) + 1)
    working = (profiles.values >= threshold).astype(np.float64)
    nonzero = (profiles.values > 0).astype(np.float64)
    prefixes, work_prefixes, nonzero_prefixes, trailing, leading = [], [], [], [], []
    prefix_starts = np.zeros(len(profiles.lengths), dtype=np.int64)
    cursor = 0
    for i, (s, n) in enumerate(zip(profiles.starts, profiles.lengths, strict=True)):
        v = profiles.values[s : s + n]
        prefixes.append(np.concatenate([[0.0], np.cumsum(v)]))
        work_prefixes.append(np.concatenate([[0.0], np.cumsum(working[s : s + n])]))
        nonzero_prefixes.append(np.concatenate([[0.0], np.cumsum(nonzero[s : s + n])]))
        trailing.append(_circular_max(v, idle_k, leading=False))
        leading.append(_circular_max(v, horizon_k, leading=True))
        prefix_starts[i] = cursor
        cursor += int(n) + 1
    return Usage(
        step=profiles.step,
        values=profiles.values,
        prefix=np.concatenate(prefixes),
        working=working,
        work_prefix=np.concatenate(work_prefixes),
        trailing_max=np.concatenate(trailing),
        leading_max=np.concatenate(leading),
        start=profiles.starts[which],
        length=lengths,
        prefix_start=prefix_starts[which],
        offset=offsets,
        own=own,
        nonzero=nonzero,
        nonzero_prefix=np.concatenate(nonzero_prefixes),
    )


def _assign(
    profiles: Profiles,
    n_jobs: int,
    seed: int,
    job_names: Sequence[str],
    arrival: FloatArray | None,
) -> tuple[IntArray, IntArray, int]:
    """Per job, its profile and its offset (its own from the start, else drawn, at its arrival's
    time of day when given), and how many jobs have their own."""
    rng = np.random.default_rng(seed)
    pool = profiles.drawable()
    which: IntArray = pool[rng.integers(0, len(pool), size=n_jobs)]
    # drawn either way, so the profiles a seed picks do not depend on how offsets are chosen
    offsets: IntArray = (rng.random(n_jobs) * profiles.lengths[which]).astype(np.int64)
    if arrival is not None:
        offsets = arrival_offsets(profiles, which, arrival)
    index = {name: i for i, name in enumerate(profiles.names)}
    own = 0
    for job, name in enumerate(job_names):
        mine = index.get(name)
        if mine is not None:
            which[job], offsets[job] = mine, 0
            own += 1
    return which, offsets, own
