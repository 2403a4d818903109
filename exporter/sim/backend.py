"""The `sim` backend: a deterministic simulated GPU node behind the real NVML code path.

`SimNode` places pods (`exporter.sim.layout`) on emulated H100s (`exporter.sim.nvml`), gives
each placed pod a host PID whose activity, memory and liveness are the pod's workload shape at the
emulator's clock, and writes the attribution fixtures (`exporter.sim.fixtures`). The exporter
then reads it through `exporter.nvml.source.NvmlSource`, exactly as on a real node. Because every
shape is a pure function of time, the node also knows the ground truth: `expected_utilization`
averages each pod's activity over the driver's sample grid in an interval, which is what a
correct exporter must report. Time comes from an injected clock; randomness from the seed.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from functools import partial
from pathlib import Path

from exporter.config import LOST, ExporterConfig, SimFault
from exporter.nvml.source import NvmlSource
from exporter.sim.fixtures import PodProcess, write_fixtures
from exporter.sim.layout import (
    REPLICAS,
    Activity,
    Placed,
    SimPod,
    activities,
    identities,
    place,
    sharers,
)
from exporter.sim.nvml import errors
from exporter.sim.nvml.device import SimGpu, SimProcess, h100
from exporter.sim.nvml.library import SimNvml
from exporter.sim.nvml.sampling import ProcessRows
from exporter.sim.workloads import (
    PodState,
    WorkloadSpec,
    default_workloads,
    load_workloads,
    spec_state,
)
from exporter.sources import Allocation, BackendParts, PodIdentity

PodKey = tuple[str, str]  # (namespace, pod)


class SimNode:
    """Emulated GPUs with pods on them, and the ground truth of what each pod did."""

    def __init__(
        self,
        gpus: Sequence[SimGpu],
        pods: Sequence[SimPod],
        *,
        seed: int,
        clock: Callable[[], float] = time.time,
        node_name: str = "sim-node",
    ) -> None:
        self.gpus = list(gpus)
        self.pods = list(pods)
        self.seed = seed
        self.clock = clock
        self.node_name = node_name
        self.trace_ids: dict[PodKey, str] = {}  # replay: the trace series each pod replays
        self.placed = place([p.spec for p in pods], gpus, seed)
        self.period_s = gpus[0].sample_period_s if gpus else 1.0
        share = sharers(self.placed)
        self._caps = {i: self._memory_cap(p, share[p.group]) for i, p in enumerate(self.placed)}
        self._cache: tuple[float, list[Activity]] | None = None
        for i, p in enumerate(self.placed):
            gpu = self.gpus[p.gpu]
            inst = gpu.mig[p.mig_slot] if gpu.mig is not None and p.mig_slot is not None else None
            gpu.processes.append(
                SimProcess(
                    pid=p.pid,
                    sm=partial(self._sm, i),
                    memory_bytes=partial(self._memory, i),
                    alive=partial(self._alive, i),
                    gpu_instance_id=inst.gpu_instance_id if inst is not None else None,
                )
            )
        self.lib = SimNvml(self.gpus, clock=clock)

    def _memory_cap(self, p: Placed, sharing: int) -> int:
        """A process's memory bound: its share of the device it is on."""
        gpu = self.gpus[p.gpu]
        if gpu.mig is not None and p.mig_slot is not None:
            inst = gpu.mig[p.mig_slot]
            return int((inst.memory_total if inst else 0) * 0.9) // sharing
        share = max(REPLICAS, sharing) if p.replica is not None else 1
        return int((gpu.memory_total - gpu.memory_reserved) * 0.95) // share

    def activity_at(self, t: float) -> list[Activity]:
        """Every placed process's activity at t (same order as `placed`); cached for one t.

        Safe to call from the collect loop's thread and a test's thread at once: the cache entry is
        replaced whole, never mutated."""
        cache = self._cache
        if cache is None or cache[0] != t:
            cache = (t, activities(self.pods, self.placed, t, self._caps))
            self._cache = cache
        return cache[1]

    def _sm(self, i: int, t: float) -> float:
        return self.activity_at(t)[i].sm

    def _memory(self, i: int, t: float) -> int:
        return self.activity_at(t)[i].memory_bytes

    def _alive(self, i: int, t: float) -> bool:
        return self.activity_at(t)[i].running

    # -- ground truth -------------------------------------------------------------------------
    def _grid(self, start: float, end: float) -> list[float]:
        """Mid-points of the driver's sample periods that end in (start, end]."""
        p = self.period_s
        first, last = int(start // p) + 1, int(end // p)
        return [(k - 0.5) * p for k in range(first, last + 1)]

    def expected_by_device(self, start: float, end: float) -> dict[tuple[str, str, str], float]:
        """Pure in (start, end): {(namespace, pod, device id): mean activity ratio}."""
        grid = self._grid(start, end)
        sums = [0.0] * len(self.placed)
        for t in grid:
            for i, a in enumerate(self.activity_at(t)):
                sums[i] += a.sm
        out = {}
        for i, p in enumerate(self.placed):
            spec = self.pods[p.pod].spec
            out[(spec.namespace, spec.pod, p.device_id)] = sums[i] / len(grid) if grid else 0.0
        return out

    def expected_utilization(self, start: float, end: float) -> dict[PodKey, float]:
        """{(namespace, pod): utilization ratio over (start, end]}, averaged over its devices."""
        per: dict[PodKey, list[float]] = {}
        for (ns, pod, _), value in self.expected_by_device(start, end).items():
            per.setdefault((ns, pod), []).append(value)
        for p in self.pods:  # pods that got no device still appear, at 0
            per.setdefault((p.spec.namespace, p.spec.pod), [0.0])
        return {k: sum(v) / len(v) for k, v in per.items()}

    # -- fixtures -----------------------------------------------------------------------------
    def allocations(self) -> list[Allocation]:
        by_pod: dict[tuple[int, str], list[str]] = {}
        for p in self.placed:
            by_pod.setdefault((p.pod, p.resource_name), []).append(p.device_id)
        return [
            Allocation(s.namespace, s.pod, s.container, res, tuple(ids))
            for (i, res), ids in sorted(by_pod.items())
            for s in (self.pods[i].spec,)
        ]

    def write_fixtures(self, root: Path) -> BackendParts:
        procs = [
            PodProcess(p.pid, pod.uid, pod.container_id, pod.cgroup_style)
            for p in self.placed
            for pod in (self.pods[p.pod],)
        ]
        idents = [PodIdentity(p.uid, p.spec.namespace, p.spec.pod) for p in self.pods]
        proc, podresources, pods_file = write_fixtures(root, procs, self.allocations(), idents)
        source = NvmlSource(self.lib, clock=self.clock)
        return BackendParts(source, proc, podresources, pods_file)


def make_pods(
    specs: Sequence[WorkloadSpec],
    seed: int,
    states: Sequence[Callable[[float], PodState]] | None = None,
) -> list[SimPod]:
    """SimPods with seeded identities; states default to each spec's shape."""
    out = []
    for i, (spec, (uid, cid, style)) in enumerate(zip(specs, identities(specs, seed), strict=True)):
        state = states[i] if states is not None else partial(spec_state, spec, seed=seed * 1000 + i)
        out.append(SimPod(spec, uid, cid, style, state))
    return out


def sim_gpus(
    gpus: int, mig: int, seed: int, process_rows: ProcessRows = ProcessRows.AVERAGED
) -> list[SimGpu]:
    """`gpus` H100s, the first `mig` of them MIG-enabled with seven 1g.10gb instances, answering
    process utilization with `process_rows`."""
    if not 0 <= mig <= gpus:
        raise ValueError(f"--sim.mig ({mig}) must be between 0 and --sim.gpus ({gpus})")
    out = [h100(i, seed, mig=i < mig) for i in range(gpus)]
    for gpu in out:
        gpu.process_rows = process_rows
    return out


def sim_specs(
    gpus: int, mig: int, pods: int, workloads_file: Path | None
) -> tuple[WorkloadSpec, ...]:
    if workloads_file is not None:
        return load_workloads(workloads_file.read_text())
    return default_workloads(pods, gpus - mig, 7 * mig)


def build_sim_backend(
    *,
    gpus: int,
    mig: int,
    pods: int,
    seed: int,
    workloads_file: Path | None,
    fixture_dir: Path,
    node_name: str,
    clock: Callable[[], float] = time.time,
    process_rows: ProcessRows = ProcessRows.AVERAGED,
) -> tuple[BackendParts, SimNode]:
    """The `sim` backend: a SimNode and the parts the collect loop reads it through."""
    devices = sim_gpus(gpus, mig, seed, process_rows)
    specs = sim_specs(gpus, mig, pods, workloads_file)
    node = SimNode(devices, make_pods(specs, seed), seed=seed, clock=clock, node_name=node_name)
    return node.write_fixtures(fixture_dir), node


def sim_backend_for(
    config: ExporterConfig, fixture_dir: Path, clock: Callable[[], float] = time.time
) -> tuple[BackendParts, SimNode]:
    """The `sim` backend the CLI builds from `config`'s `--sim.*` flags, faults included."""
    parts, node = build_sim_backend(
        gpus=config.sim_gpus,
        mig=config.sim_mig,
        pods=config.sim_pods,
        seed=config.sim_seed,
        workloads_file=config.sim_workloads,
        fixture_dir=fixture_dir,
        node_name=config.node_name,
        clock=clock,
    )
    for fault in config.sim_faults:
        apply_fault(node.lib, fault, later=clock() + config.collect_interval / 2)
    return parts, node


def apply_fault(lib: SimNvml, fault: SimFault, *, later: float) -> None:
    """Inject one `--sim.fault` into the emulator, or ValueError when it names a function or an
    error the emulator does not have. A lost GPU and a hang start at `later` (after the first
    cycle): a GPU falls off the bus, or its driver wedges, under an exporter that has seen it."""
    if fault.call == LOST:
        lib.inject("*", errors.NVML_ERROR_GPU_IS_LOST, index=fault.gpu, after=later)
        return
    if not callable(getattr(lib, fault.call, None)):
        raise ValueError(f"--sim.fault {fault.call}: the NVML emulator has no such function")
    if fault.error == "hang":
        lib.inject_hang(fault.call, index=fault.gpu, after=later)
        return
    error = getattr(errors, f"NVMLError_{fault.error or 'Unknown'}", None)
    if not (isinstance(error, type) and issubclass(error, errors.NVMLError)):
        names = sorted(
            n.removeprefix("NVMLError_") for n in dir(errors) if n.startswith("NVMLError_")
        )
        raise ValueError(f"--sim.fault {fault.error}: not an NVML error ({', '.join(names)}, hang)")
    lib.inject(fault.call, error().value, index=fault.gpu)
