"""The pool's replicas at the start of a replay, and `timeslice-tuned`'s choice of them.

`timeslice` gives every pool node `--replicas`; `forecast` starts whole (1 replica, the pool's
nodes opted into the controller's managed pool, `Node.pool`) and reshapes, or at `--replicas`
with `--forecast-start replicas`.
`timeslice-tuned` is the static time-slicing a careful operator would set for the whole replay,
knowing the memory its pods will hold: per GPU model of the pool, the largest replica count R in
1..`MAX_TUNED_REPLICAS` for which R pods at the replay's 99th-percentile pod memory peak fit
`TUNED_HEADROOM` (90%) of that model's memory, `R x p99 <= 0.9 x device GiB`; R = 1 leaves that
model's pool nodes whole. These are the controller's own defaults (docs/policy.md): it keeps
`timeSlicing.memoryHeadroom` (0.1) of a GPU free, budgets a pod slot at the
`timeSlicing.memoryPeakQuantile` (0.99) of the pods' peaks and raises to `maxReplicas` (4) at most;
the baseline budgets as the controller does, once, for the whole replay. A model's memory is what
the replay checks pods against (`sim_sharing.contention.node_gib`): the node list's measured
`gpu_memory_mib` where it gives it (an `export-history` list, whose nodes may all be of model
`unknown`), else the model's; nodes of one model measured at different sizes are tuned apart, each
size named `<model> <GiB> GiB`.

The peaks are the replay's own, read in hindsight: each one-GPU job's (only those take a replica)
most memory over the span it replays (its progress from 0 to its run time), from the memory series
actually replayed (after `--memory-peak-gib`'s scaling, none on an export) and within the bound a
sharing pod has on a GPU of that model (`sim_sharing.share_memory`). An operator knows only the
past, so this favours the baseline over `forecast`, which reads the last week's peaks as it goes.
Without a memory series every peak is 0 and R is `MAX_TUNED_REPLICAS` (`simulate` asks for
`--memory`). Pure.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np

from reclaimer.simulate.pool.members import keeps_a_node_whole, pool_nodes, pool_replicas
from reclaimer.simulate.settings import SimSettings
from reclaimer.simulate.sharing.contention import node_gib
from reclaimer.simulate.sharing.usage import Usage
from reclaimer.simulate.strategies import Strategy
from reclaimer.simulate.trace import BoolArray, FloatArray, IntArray, Jobs, Nodes

TUNED_HEADROOM = 0.9  # of a GPU's memory the pod slots may fill (1 - `memoryHeadroom`)
TUNED_QUANTILE = 99.0  # of the pods' peaks a slot is budgeted at (`memoryPeakQuantile`)
MAX_TUNED_REPLICAS = 4


@dataclass(frozen=True)
class TunedModel:
    """What `timeslice-tuned` chose for one GPU model of the pool, and from what."""

    p99_peak_gib: float
    device_gib: float
    replicas: int

    def as_dict(self) -> dict[str, float]:
        return {
            "p99_peak_gib": round(self.p99_peak_gib, 3),
            "device_gib": round(self.device_gib, 3),
            "replicas": self.replicas,
        }


def replicas_for(peak_gib: float, gib: float) -> int:
    """The largest R in 1..`MAX_TUNED_REPLICAS` with `R x peak_gib <= TUNED_HEADROOM x gib`
    (1 when not even one such pod fits: the node stays whole)."""
    room = TUNED_HEADROOM * gib
    return max([r for r in range(1, MAX_TUNED_REPLICAS + 1) if r * peak_gib <= room], default=1)


def job_peaks(jobs: Jobs, usage: Usage, gib: float) -> FloatArray:
    """Each one-GPU job's most memory over the span it replays, on a GPU of `gib` GiB."""
    one_gpu = np.flatnonzero(jobs.num_gpu == 1)
    return np.array(
        [usage.memory_peak(int(j), 0.0, float(jobs.runtime[j]), gib) for j in one_gpu],
        dtype=np.float64,
    )


def model_groups(nodes: Nodes, rows: list[int], anonymized_gib: float) -> dict[int, str]:
    """Per node of `rows`, the group it is tuned in: its model, named with its GiB where the
    list measured nodes of that model at different sizes (module doc)."""
    gib = {i: node_gib(nodes, i, anonymized_gib) for i in rows}
    sizes: dict[str, set[float]] = {}
    for i in rows:
        sizes.setdefault(str(nodes.model(i)), set()).add(gib[i])
    return {
        i: str(nodes.model(i))
        if len(sizes[str(nodes.model(i))]) == 1
        else f"{nodes.model(i)} {gib[i]:g} GiB"
        for i in rows
    }


def tuned_models(
    jobs: Jobs, nodes: Nodes, usage: Usage, settings: SimSettings, pool: BoolArray
) -> dict[str, TunedModel]:
    """R per GPU model of the pool's nodes (`pool`: one flag per node), from the replay's peaks."""
    rows = np.flatnonzero(pool).tolist()
    groups = model_groups(nodes, rows, settings.anonymized_gib)
    out: dict[str, TunedModel] = {}
    for name, i in sorted({name: i for i, name in groups.items()}.items()):
        gib = node_gib(nodes, i, settings.anonymized_gib)
        peaks = job_peaks(jobs, usage, gib)
        p99 = float(np.percentile(peaks, TUNED_QUANTILE)) if len(peaks) else 0.0
        out[name] = TunedModel(p99, gib, replicas_for(p99, gib))
    return out


def tuned_pool(
    jobs: Jobs, nodes: Nodes, usage: Usage, settings: SimSettings
) -> tuple[IntArray | None, Mapping[str, TunedModel]]:
    """`timeslice-tuned`'s replicas per node (1 off the pool), and its choice per model."""
    if settings.pool_share <= 0:
        return None, {}
    pool = pool_nodes(
        nodes, settings.pool_share, keeps_a_node_whole(jobs, nodes), settings.pool_seed
    )
    models = tuned_models(jobs, nodes, usage, settings, pool)
    groups = model_groups(nodes, np.flatnonzero(pool).tolist(), settings.anonymized_gib)
    per_node = [models[groups[i]].replicas if i in groups else 1 for i in range(len(pool))]
    return np.array(per_node, dtype=np.int64), models


def start_replicas(
    jobs: Jobs, nodes: Nodes, usage: Usage, settings: SimSettings
) -> tuple[IntArray, BoolArray] | None:
    """Replicas per node when a time-slicing strategy's replay starts, and the pool (None: no
    pool). `forecast`'s pool starts whole unless told otherwise: the controller raises it once
    the memory budget says its pods fit (`plan.reshape`, `Node.pool`)."""
    if settings.strategy is Strategy.TIMESLICE_TUNED:
        tuned = tuned_pool(jobs, nodes, usage, settings)[0]
        return None if tuned is None else (tuned, tuned >= 2)
    keep = keeps_a_node_whole(jobs, nodes)
    start = pool_replicas(nodes, settings.pool_share, settings.replicas, keep, settings.pool_seed)
    if start is None:
        return None
    pool = start >= 2
    if settings.strategy is Strategy.FORECAST and settings.forecast_start_whole:
        start = np.ones_like(start)
    return start, pool
