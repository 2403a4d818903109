"""Each pool node's load history in a replay, as the controller reads it from Prometheus.

The controller reads a node's load (`Node.load`) as the hourly mean of its GPUs' utilization on a
grid of whole hours over the last `LOAD_DAYS`, NaN where Prometheus holds no sample
(`prometheus.sharing.load_query`, `load_range`, `load_histories`). The replay records, at every
control tick, the mean over the node's GPUs of the utilization `sim_pool.timeslice.pool_readings`
gives (the members' demand, at most 1 per GPU, over the stats window), and `history` lays those
samples out on the same grid: the value at each whole hour T is the mean of the samples taken in
the hour before T. Hours before the replay began hold no sample (NaN), as they would in a
Prometheus installed with the controller; a node never sampled has no history (None), as a node
with no series has none in the controller. Samples older than the grid are dropped.
"""

from __future__ import annotations

import itertools
import math

import numpy as np

from reclaimer.model import GpuStats, LoadHistory
from reclaimer.prometheus.sharing import LOAD_DAYS, LOAD_STEP, load_range

KEEP_HOURS = round(LOAD_DAYS * 86400.0 / LOAD_STEP) + 2


class LoadLog:
    """Hourly sums of each node's load samples (mutable; one per replay)."""

    def __init__(self) -> None:
        self._hours: dict[int, dict[int, list[float]]] = {}  # node -> hour -> [sum, count]
        self._means: dict[int, dict[int, float]] = {}  # node -> hour -> sum / count, kept current
        # node -> (grid end, history): a grid holds only hours already over, so it never changes
        self._cache: dict[int, tuple[float, LoadHistory | None]] = {}

    def record(self, stats: dict[int, tuple[GpuStats, ...]], now: float) -> None:
        """One sample per node: the mean utilization of its GPUs now."""
        hour = math.floor(now / LOAD_STEP)
        for node, gpus in stats.items():
            if not gpus:
                continue
            hours = self._hours.setdefault(node, {})
            means = self._means.setdefault(node, {})
            if hour not in hours:
                hours.pop(hour - KEEP_HOURS, None)
                means.pop(hour - KEEP_HOURS, None)
                hours[hour] = [0.0, 0.0]
            bucket = hours[hour]
            bucket[0] += sum(s.utilization for s in gpus) / len(gpus)
            bucket[1] += 1.0
            means[hour] = bucket[0] / bucket[1]

    def history(self, node: int, now: float) -> LoadHistory | None:
        """The node's load on the controller's grid ending at the last whole hour (module doc)."""
        first, last = load_range(now)
        cached = self._cache.get(node)
        if cached is not None and cached[0] == last:
            return cached[1]
        means = self._means.get(node, {})
        steps = round((last - first) / LOAD_STEP) + 1
        # the hour before each grid point, round((first + i * LOAD_STEP) / LOAD_STEP) - 1, in
        # numpy (the same float64 arithmetic; np.rint rounds half to even as round() does), and
        # its mean as `record` last left it (the bucket's sum / count then, so the same float)
        grid = np.rint((first + np.arange(steps) * LOAD_STEP) / LOAD_STEP).astype(np.int64) - 1
        values = tuple(map(means.get, grid.tolist(), itertools.repeat(math.nan)))
        found = None
        if not all(math.isnan(v) for v in values):
            found = LoadHistory(first - LOAD_STEP, LOAD_STEP, values)
        self._cache[node] = (last, found)
        return found
