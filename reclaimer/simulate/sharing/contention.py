"""What time-slicing one GPU between pods costs them: GPU time (contention) and memory (OOM).

**Contention** has two models (`Contention`, `simulate --contention`), one from each side.
**`fair`** (the default): NVIDIA's time-slicing gives every process with work an equal share of
the GPU's time ("Time-Slicing GPUs in Kubernetes", GPU Operator docs); a process with nothing to
run yields its slice. So at each moment the GPU's time is water-filled: each pod on the device
asks its *demand* (its profile's busy fraction then), pods asking less than an equal share get
what they ask, and the rest split what is left equally. Switching contexts costs time: while two
or more pods have work at once, the device has `1 - switch_overhead` of its time to give. A
pod's progress rate is its share over its demand, capped at 1 (a pod with no demand is not
slowed), so light pods barely slow and heavy ones do. It assumes that a pod's GPU work fits in
its neighbours' time off the GPU: two pods at demand 0.45 each never slow.
**`pessimistic`** assumes no such fit: every moment a neighbour spends on the GPU is a moment
this pod waits, so a pod with work runs at `1 / (1 + the sum of its neighbours' demand)` (two
pods at 0.45: 1 / 1.45 each). No switch overhead is added, as every neighbour's time is charged
in full already. It bounds `fair` from below where the pods' demands together fit the GPU (where
`fair` slows no one). Where they pass it, `fair` gives a light pod all it asks and a heavy one
the rest, so a heavy pod can run slower under `fair`: demands 1.0 and 0.5 run at 0.5x and 1x
under `fair` without overhead, at 0.67x and 0.5x under `pessimistic`.

Derivation of the overhead from measurements (KubeRay on time-slicing, COMPSAC'24, second-hand
figures in the project's reference notes): two fully busy jobs ran at about 0.57x each, three at
0.39x. In this model `n` jobs of demand `d` each run at `(1 - o) / (n d)`, so `o = 0` reproduces
both points with `d = 0.877` (two) and `d = 0.855` (three): a training loop reported "fully busy"
still spends ~13% of its time off the GPU (data loading, host work), and the points show no
switch loss beyond that. With `d = 1` the points would need a negative overhead, which the model
does not allow. The default `DEFAULT_SWITCH_OVERHEAD` (5%) therefore sits above what the points
show, on the pessimistic side; `--switch-overhead` runs the sensitivity (0, 15%, 30%). The
KubeRay paper does not give its jobs' busy share alone, so the overhead cannot be fitted: with
`d = 1` the points allow none, with `d` nearer 0.8 they allow more. `pessimistic` puts those
points at 0.533x (two, `d = 0.877`) and 0.369x (three, `d = 0.855`), below what was measured.
`measured_points` gives what a model predicts for those two experiments.

**Memory.** Time-slicing isolates no memory: when the pods on a device together ask more than
the device holds, an allocation fails and that process dies (k8s-device-plugin #323: the pod
whose memory *grows* past what is left is the one OOM-killed, its neighbour keeps running). So
the victim is the pod whose memory grew most at the sample where the sum first passes the
device; ties go to the one placed last. `device_gib` says how much memory each node model holds,
`node_gib` how much a node's GPUs hold (measured where the node list gives it, else the model's).
Pure: numpy only.
"""

from __future__ import annotations

from collections.abc import Mapping
from enum import StrEnum

import numpy as np

from reclaimer.simulate.trace import FloatArray, Nodes


class Contention(StrEnum):
    """How a time-sliced GPU's time is divided among its pods (see the module doc)."""

    FAIR = "fair"  # water-filling: equal shares, none beyond demand, less the switch overhead
    PESSIMISTIC = "pessimistic"  # every neighbour's demand costs a pod time in full


DEFAULT_SWITCH_OVERHEAD = 0.05
KUBERAY_POINTS = ((2, 0.57), (3, 0.39))  # (jobs fully busy together, speed of each)

# GiB per GPU of the openb node models; G2 and G3 are anonymized in the trace.
MODEL_GIB: Mapping[str, float] = {
    "V100M16": 16.0,
    "V100M32": 32.0,
    "P100": 16.0,
    "T4": 16.0,
    "A10": 24.0,
}
DEFAULT_ANONYMIZED_GIB = 16.0  # a model the trace anonymizes: the smallest the fleet has


def device_gib(model: str, anonymized_gib: float = DEFAULT_ANONYMIZED_GIB) -> float:
    """GiB of one GPU of `model`; an unknown (anonymized) model holds `anonymized_gib`."""
    return MODEL_GIB.get(model, anonymized_gib)


def node_gib(nodes: Nodes, node: int, anonymized_gib: float = DEFAULT_ANONYMIZED_GIB) -> float:
    """GiB of one GPU of `node`: as the node list measured it (`gpu_memory_mib`, an
    `export-history` list), else its model's (`device_gib`)."""
    measured = nodes.memory(node)
    return measured if measured is not None else device_gib(nodes.model(node), anonymized_gib)


def water_fill(demand: FloatArray, overhead: float) -> FloatArray:
    """Each pod's share of GPU time, per column of `demand` (pods x moments, padded with 0).

    Equal shares of the device's time among pods with work, none given beyond demand. The device
    gives `1 - overhead` of its time while two or more pods have work, all of it otherwise.
    """
    busy = (demand > 0).sum(axis=0)
    capacity = np.where(busy >= 2, 1.0 - overhead, 1.0)
    ordered = np.sort(demand, axis=0)
    n = demand.shape[0]
    before = np.zeros(ordered.shape)  # what the smaller rows take: 0, then the running sum
    np.cumsum(ordered[:-1], axis=0, out=before[1:])
    left = (n - np.arange(n))[:, None].astype(np.float64)
    level = (capacity[None, :] - before) / left  # equal share of what the smaller ones left
    short = ordered > level  # from the first such row on, everyone gets `level`
    first = np.where(short.any(axis=0), short.argmax(axis=0), n)
    cut = level[np.minimum(first, n - 1), np.arange(demand.shape[1])]
    water = np.where(first < n, cut, np.inf)
    result: FloatArray = np.minimum(demand, water[None, :])
    return result


def progress_rates(
    demand: FloatArray, overhead: float, contention: Contention = Contention.FAIR
) -> FloatArray:
    """Speed of each pod relative to running alone, per moment: under `fair` its water-filled
    share over its demand (at most 1), under `pessimistic` `1 / (1 + its neighbours' demand)`
    (`overhead` unused). A pod with no demand runs at 1 under both."""
    if contention is Contention.PESSIMISTIC:
        neighbours = demand.sum(axis=0)[None, :] - demand
        slowed: FloatArray = np.where(demand > 0, 1.0 / (1.0 + neighbours), 1.0)
        return slowed
    share = water_fill(demand, overhead)
    with np.errstate(divide="ignore", invalid="ignore"):
        rate = np.where(demand > 0, share / np.where(demand > 0, demand, 1.0), 1.0)
    result: FloatArray = np.minimum(rate, 1.0)
    return result


def measured_points(
    overhead: float, demand: float, contention: Contention = Contention.FAIR
) -> tuple[tuple[int, float], ...]:
    """What a model gives `n` jobs of `demand` each, for the KubeRay experiments' `n`."""
    out = []
    for n, _ in KUBERAY_POINTS:
        rates = progress_rates(np.full((n, 1), demand), overhead, contention)
        out.append((n, round(float(rates[0, 0]), 3)))
    return tuple(out)


def oom_victim(memory: FloatArray, before: FloatArray, limit: float) -> int | None:
    """Which pod (row) dies when the device's memory runs out, or None if it never does.

    `memory` is pods x moments (GiB), `before` each pod's GiB just before the first moment (0
    for a pod that just started). At the first moment the sum passes `limit`, the pod whose
    memory grew most dies (ties: the last row, the one placed last).
    """
    if memory.shape[0] < 2:
        return None  # alone on its GPU: the pod ran like this in the trace
    over = memory.sum(axis=0) > limit
    if not over.any():
        return None
    k = int(over.argmax())
    previous = before if k == 0 else memory[:, k - 1]
    growth = memory[:, k] - previous
    rows = np.flatnonzero(growth == growth.max())
    return int(rows[-1])
