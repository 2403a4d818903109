"""Where a simulated node's pods sit, and what each does at time t (pure).

`place` puts every pod on devices the way the NVIDIA device plugin would hand them out: whole
GPUs for exclusive pods, replicas `GPU-<uuid>::<n>` of time-sliced GPUs (4 per GPU) for shared
pods, one MIG instance each for MIG pods; each pod gets one host PID per device. `activities`
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
    """Pure: every pod's devices, or ValueError naming the pods that do not fit."""
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
