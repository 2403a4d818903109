"""Where a simulated node's pods sit, and what each does at time t (pure).

`place` puts every pod on devices the way the NVIDIA device plugin would hand them out: whole
GPUs for exclusive pods, replicas `GPU-<uuid>::<n>` of time-sliced GPUs (4 per GPU) for shared
pods, one MIG instance each for MIG pods; each pod gets one host PID per device. When the pods do
not fit so, any number still does (`_place_dense`): exclusive pods keep whole GPUs while some
device is left for the rest, and every other request goes to the least-shared device, whole GPUs
time-sliced with more replicas and MIG instances time-sliced too (`MIG-<uuid>::<n>`), a pod's own
kind first on a tie. `activities`
then says what every placed process does at t: time-slicing shares a GPU, so when the pods on one
GPU together want more than all of it, each gets its demand scaled down in proportion, and the
sum never exceeds the device.
"""

from __future__ import annotations

import random
import uuid as uuidlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from exporter.sim.nvml.device import SimGpu
from exporter.sim.workloads import PodState, WorkloadSpec

REPLICAS = 4


@dataclass(frozen=True)
class SimPod:
    spec: WorkloadSpec
    uid: str
    container_id: str
    cgroup_style: int
    state: Callable[[float], PodState]  # pure function of time


@dataclass(frozen=True)
class Placed:
    """One pod's process on one device."""

    pod: int  # index into the pods
    gpu: int
    mig_slot: int | None
    replica: int | None  # time-slice replica number
    pid: int
    device_id: str  # as the kubelet reports it
    resource_name: str

    @property
    def group(self) -> tuple[int, int | None]:
        """The processes of one group share one device (a GPU or a MIG instance)."""
        return (self.gpu, self.mig_slot)


@dataclass(frozen=True)
class Activity:
    sm: float  # ratio of the device this process keeps busy
    running: bool
    memory_bytes: int


def identities(specs: Sequence[WorkloadSpec], seed: int) -> list[tuple[str, str, int]]:
    """(pod UID, container id, cgroup style) per pod, from the seed."""
    rng = random.Random(seed)
    return [
        (str(uuidlib.UUID(int=rng.getrandbits(128), version=4)), f"{rng.getrandbits(256):064x}", i)
        for i, _ in enumerate(specs)
    ]


def place(specs: Sequence[WorkloadSpec], gpus: Sequence[SimGpu], seed: int) -> tuple[Placed, ...]:
    """Pure: every pod's devices; one device per request while they last, then shared."""
    try:
        return _place_sparse(specs, gpus, seed)
    except ValueError:
        return _place_dense(specs, gpus, seed)


def _place_sparse(
    specs: Sequence[WorkloadSpec], gpus: Sequence[SimGpu], seed: int
) -> tuple[Placed, ...]:
    """Whole GPUs, 4 replicas per time-sliced GPU, one pod per MIG instance, or ValueError naming
    the pods that do not fit."""
    rng = random.Random(seed + 1)
    free_full = [g for g in gpus if not g.mig_enabled]
    free_mig = [(g, s) for g in gpus for s, inst in enumerate(g.mig or ()) if inst is not None]
    shared: list[tuple[SimGpu, int]] = []  # free time-slice replicas
    pids = iter(rng.sample(range(1000, 4_000_000), sum(s.gpus for s in specs)))
    placed: list[Placed] = []
    unplaced: list[str] = []
    order = sorted(range(len(specs)), key=lambda i: (specs[i].shared, specs[i].mig, i))
    for i in order:
        spec = specs[i]
        for _ in range(spec.gpus):
            if spec.mig and free_mig:
                gpu, slot = free_mig.pop(0)
                inst = (gpu.mig or [])[slot]
                assert inst is not None
                res = f"nvidia.com/mig-{inst.profile}"
                placed.append(Placed(i, gpu.index, slot, None, next(pids), inst.uuid, res))
            elif spec.shared and (shared or free_full):
                if not shared:
                    gpu = free_full.pop(0)
                    shared = [(gpu, n) for n in range(REPLICAS)]
                gpu, n = shared.pop(0)
                dev_id = f"{gpu.uuid}::{n}"
                placed.append(Placed(i, gpu.index, None, n, next(pids), dev_id, "nvidia.com/gpu"))
            elif not spec.shared and not spec.mig and free_full:
                gpu = free_full.pop(0)
                placed.append(
                    Placed(i, gpu.index, None, None, next(pids), gpu.uuid, "nvidia.com/gpu")
                )
            else:
                unplaced.append(f"{spec.namespace}/{spec.pod}")
    if unplaced:
        raise ValueError(f"no free device for: {', '.join(sorted(set(unplaced)))}")
    return tuple(sorted(placed, key=lambda p: (p.pod, p.gpu, p.mig_slot or -1)))


def _place_dense(
    specs: Sequence[WorkloadSpec], gpus: Sequence[SimGpu], seed: int
) -> tuple[Placed, ...]:
    """Every request placed, devices shared as evenly as they can be (see the module doc)."""
    rng = random.Random(seed + 1)
    pids = iter(rng.sample(range(1000, 4_000_000), sum(s.gpus for s in specs)))
    whole = [g for g in gpus if not g.mig_enabled]
    pool: list[tuple[SimGpu, int | None]] = [
        (g, slot) for g in gpus for slot, inst in enumerate(g.mig or ()) if inst is not None
    ]
    placed: list[Placed] = []
    order = sorted(range(len(specs)), key=lambda i: (specs[i].shared, specs[i].mig, i))
    rest: list[int] = []  # pod index per request that shares a device
    for i in order:
        spec = specs[i]
        exclusive = not (spec.shared or spec.mig)
        if exclusive and len(whole) - spec.gpus >= (0 if pool else 1):
            for _ in range(spec.gpus):
                gpu = whole.pop(0)
                res = "nvidia.com/gpu"
                placed.append(Placed(i, gpu.index, None, None, next(pids), gpu.uuid, res))
        else:
            rest.extend([i] * spec.gpus)
    pool = [(g, None) for g in whole] + pool
    if rest and not pool:
        raise ValueError("no device to place pods on")
    load = [0] * len(pool)
    for i in rest:
        wants_mig = specs[i].mig
        k = min(range(len(pool)), key=lambda d: (load[d], (pool[d][1] is None) == wants_mig, d))
        gpu, slot = pool[k]
        placed.append(_replica(i, gpu, slot, load[k], next(pids)))
        load[k] += 1
    return tuple(sorted(placed, key=lambda p: (p.pod, p.gpu, p.mig_slot or -1, p.replica or 0)))


def _replica(pod: int, gpu: SimGpu, slot: int | None, n: int, pid: int) -> Placed:
    """Time-slice replica `n` of a whole GPU (slot None) or of one MIG instance."""
    if slot is None:
        return Placed(pod, gpu.index, None, n, pid, f"{gpu.uuid}::{n}", "nvidia.com/gpu")
    inst = (gpu.mig or [])[slot]
    assert inst is not None
    res = f"nvidia.com/mig-{inst.profile}"
    return Placed(pod, gpu.index, slot, n, pid, f"{inst.uuid}::{n}", res)


def sharers(placed: Sequence[Placed]) -> dict[tuple[int, int | None], int]:
    """How many placed processes share each device (GPU or MIG instance)."""
    out: dict[tuple[int, int | None], int] = {}
    for p in placed:
        out[p.group] = out.get(p.group, 0) + 1
    return out


def activities(
    pods: Sequence[SimPod], placed: Sequence[Placed], t: float, memory_caps: dict[int, int]
) -> list[Activity]:
    """Pure: what each placed process does at t (same order as `placed`).

    `memory_caps` bounds a process's memory by its device (index into `placed`)."""
    states = [pods[p.pod].state(t) for p in placed]
    wanted: dict[tuple[int, int | None], float] = {}
    for p, st in zip(placed, states, strict=True):
        if st.has_process:
            wanted[p.group] = wanted.get(p.group, 0.0) + max(0.0, st.demand)
    out = []
    for i, (p, st) in enumerate(zip(placed, states, strict=True)):
        total = wanted.get(p.group, 0.0)
        scale = 1.0 if total <= 1.0 else 1.0 / total
        sm = min(1.0, max(0.0, st.demand) * scale) if st.has_process else 0.0
        memory = min(st.memory_bytes, memory_caps.get(i, st.memory_bytes)) if st.has_process else 0
        out.append(Activity(sm, st.has_process, memory))
    return out
