"""How often a pod's neighbour is busy while the pod is: on a trace, and over a replay.

A pod is *busy* at a sample with any demand (utilization above 0). Its *co-busy* share is the
share of its busy time in which a neighbour is busy too. Time-slicing gives every process with
work an equal share of the GPU (GPU Operator docs, "Time-Slicing GPUs in Kubernetes"), so only
then can a latency-sensitive request find the GPU held by a neighbour's slice, and be served at
up to half speed.

**On a trace** (`neighbour_busy_share`): at a moment with `B` busy pods out of `P` present, each
busy pod has `P - 1` neighbours of which `B - 1` are busy; summed over moments, the share is
`sum B (B - 1) / sum B (P - 1)`: P(neighbour busy | pod busy), every busy sample of every pod
weighted alike. `trace_moments` lays the profiles at their own timestamps (GenTD26's pods were
sampled together, so this is the trace's own arrangement); `offset_moments` starts each at an
offset and cycles it over a common span (the replay's `random` offsets); `independent_share` is
what independent uniform offsets give on average: each neighbour is busy its own busy share.

**Over a replay** (`CobusyLog`, reported as `ls_cobusy_share`): for the pods of the `ls` queue
(openb's latency-sensitive qos) when it is guaranteed. Busy time is every run segment's busy
samples (`Usage.nonzero_seconds`), on the pool or off it. Co-busy time comes from the
time-slicing pricer (`sim_pool.timeslice.reprice`): for the coming share step it reads each pod's
and its neighbours' samples (the ones its rate is read from), and `cobusy_fractions` gives the
fraction of them at which the pod and at least one neighbour are busy; the log applies that
fraction to the progress the pod makes until its GPU is priced again or it stops, as the rate is
applied. Both count profile time (the time a pod would be busy alone), so a busy sample that
sharing slows counts once: the share is of the pod's work, as a share of its requests would be.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from reclaimer.simulate.sharing.usage import Usage
from reclaimer.simulate.trace import BoolArray, FloatArray, IntArray, Profiles

LATENCY_SENSITIVE = "ls"  # openb's qos `LS`, lower-cased as the replay names its queue


def neighbour_busy_share(busy: BoolArray, present: BoolArray) -> float:
    """P(a neighbour is busy | a pod is busy) over pods x moments (module doc); 0 with no pair."""
    busy_now = busy.sum(axis=0).astype(np.float64)
    present_now = present.sum(axis=0).astype(np.float64)
    pairs = float((busy_now * (present_now - 1)).sum())
    return float((busy_now * (busy_now - 1)).sum()) / pairs if pairs else 0.0


def _profile(profiles: Profiles, index: int) -> FloatArray:
    first = int(profiles.starts[index])
    result: FloatArray = profiles.values[first : first + int(profiles.lengths[index])]
    return result


def trace_moments(profiles: Profiles, pods: IntArray) -> tuple[BoolArray, BoolArray]:
    """Busy and present, pods x moments, each profile at its own timestamps (`origins`)."""
    origins = np.array(profiles.origins) if profiles.origins else np.zeros(len(profiles.lengths))
    slots = np.rint((origins[pods] - origins[pods].min()) / profiles.step).astype(np.int64)
    span = int((slots + profiles.lengths[pods]).max())
    busy = np.zeros((len(pods), span), dtype=bool)
    present = np.zeros((len(pods), span), dtype=bool)
    for row, (index, slot) in enumerate(zip(pods.tolist(), slots.tolist(), strict=True)):
        values = _profile(profiles, index)
        present[row, slot : slot + len(values)] = True
        busy[row, slot : slot + len(values)] = values > 0
    return busy, present


def offset_moments(profiles: Profiles, pods: IntArray, offsets: IntArray, span: int) -> BoolArray:
    """Busy, pods x `span` moments, each profile from its offset, cycling (every pod present)."""
    rows = []
    for index, offset in zip(pods.tolist(), offsets.tolist(), strict=True):
        values = _profile(profiles, index)
        rows.append(values[(offset + np.arange(span)) % len(values)] > 0)
    result: BoolArray = np.array(rows, dtype=bool)
    return result


def independent_share(profiles: Profiles, pods: IntArray) -> float:
    """The share `offset_moments` gives on average over independent uniform offsets."""
    share = np.array([float((_profile(profiles, i) > 0).mean()) for i in pods.tolist()])
    total = float(share.sum())
    if len(share) < 2 or total == 0:
        return 0.0
    return (total**2 - float((share**2).sum())) / (total * (len(share) - 1))


def cobusy_fractions(demand: FloatArray) -> FloatArray:
    """Per GPU and pod (devices x pods x moments in, padded with 0), the fraction of moments at
    which the pod and at least one other pod of its GPU both have demand."""
    busy = demand > 0
    others = busy.sum(axis=1, keepdims=True) - busy
    result: FloatArray = (busy & (others > 0)).mean(axis=2)
    return result


class CobusyLog:
    """Busy and co-busy seconds of the counted jobs over a replay (module doc), and every
    job's co-busy seconds so far (`so_far`, the controller's contention reading)."""

    def __init__(self, usage: Usage, counted: Sequence[bool]) -> None:
        self.usage = usage
        self.counted = tuple(counted)
        self.busy_seconds = 0.0
        self.cobusy_seconds = 0.0
        self._priced: dict[int, tuple[float, float]] = {}  # job: (progress then, fraction since)
        self._settled: dict[int, float] = {}  # job: co-busy seconds up to its last pricing

    def priced(self, job: int, progress: float, fraction: float) -> None:
        """The job's GPU was priced at `progress`: `fraction` holds from there on."""
        self._settle(job, progress)
        self._priced[job] = (progress, fraction)

    def ended(self, job: int, base: float, progress: float) -> None:
        """A run segment from `base` to `progress` ended (finished, preempted or killed)."""
        self._settle(job, progress)
        self._priced.pop(job, None)
        if self.counted[job]:
            self.busy_seconds += self.usage.nonzero_seconds(job, base, progress)

    def so_far(self, job: int, progress: float) -> float:
        """The job's co-busy seconds over the replay, up to `progress` of its current run."""
        since, fraction = self._priced.get(job, (progress, 0.0))
        return self._settled.get(job, 0.0) + fraction * max(progress - since, 0.0)

    def _settle(self, job: int, progress: float) -> None:
        since, fraction = self._priced.get(job, (progress, 0.0))
        seconds = fraction * max(progress - since, 0.0)
        if seconds:
            self._settled[job] = self._settled.get(job, 0.0) + seconds
            if self.counted[job]:
                self.cobusy_seconds += seconds
