"""The state of one emulated GPU, advanced on the driver's sampling grid.

The simulator (or a test) describes each process by functions of time: its SM activity and
memory-controller activity (ratios 0..1), its memory, and whether it is running. The device is
advanced lazily, one sample period at a time, up to the time the emulator is asked something:
at each period boundary it evaluates every live process at the middle of the period, records one
sample per live process in the driver's buffer (`exporter.sim.nvml.sampling`, idle periods too),
and integrates energy and the GPM activity counters. Power, temperature and clocks follow the
last period's activity. The energy counter is read at the moment asked (`energy_mj_at`): the
periods integrated plus the period in progress so far, at its power, as a counter in millijoules
keeps counting between two reads; a counter that moved once a period would make the energy
between two reads depend on where they fall in their periods. The first advance integrates
`WARMUP_PERIODS` of history, as a GPU that ran before anyone looked: the state at time t then
hardly depends on when the emulator was created, so two emulators of the same node (the
exporter's and a fake nvidia-smi's) agree.
Nothing here knows about the NVML call surface.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field

from exporter.sim.nvml.sampling import ProcessRows, SampleBuffer, UtilizationRow

MIB = 1 << 20
WARMUP_PERIODS = 120


def _zero(_t: float) -> float:
    return 0.0


def _always(_t: float) -> bool:
    return True


@dataclass
class SimProcess:
    """One host process holding a CUDA context on a GPU or on one MIG instance."""

    pid: int
    sm: Callable[[float], float] = _zero  # SM activity ratio at time t
    memory_bytes: Callable[[float], int] = lambda _t: 0
    alive: Callable[[float], bool] = _always
    mem_util: Callable[[float], float] | None = None  # default: 0.6 x SM activity
    gpu_instance_id: int | None = None  # the MIG GPU instance it runs in, None on a full GPU
    mps: bool = False  # an MPS client: listed by the MPS call, its context held by the MPS server

    def activity(self, t: float) -> tuple[float, float]:
        sm = min(1.0, max(0.0, self.sm(t)))
        mem = self.mem_util(t) if self.mem_util is not None else 0.6 * sm
        return sm, min(1.0, max(0.0, mem))


@dataclass(frozen=True)
class SimMigInstance:
    gpu_instance_id: int
    compute_instance_id: int
    profile: str  # e.g. "1g.10gb"
    uuid: str  # MIG-...
    memory_total: int  # bytes
    slices: int = 1


@dataclass
class SimGpu:
    """A physical GPU. `mig` is None when MIG is disabled, else one entry per MIG slot."""

    index: int
    uuid: str
    pci_bus_id: str
    minor: int
    name: str = "NVIDIA H100 80GB HBM3"
    memory_total: int = 81559 * MIB
    memory_reserved: int = 527 * MIB
    mig: list[SimMigInstance | None] | None = None
    gpm_supported: bool = True
    process_utilization_supported: bool = True
    memory_temperature_supported: bool = True
    memory_temperature_type: int = 1  # the valueType of NVML_FI_DEV_MEMORY_TEMP (unsigned int)
    xid_events_supported: bool = True  # False: XidCriticalError missing from its event types
    mps_server_pid: int | None = None  # the MPS control daemon's server, once a client runs
    junk_every: int = 7  # every n-th non-empty process-utilization answer carries junk rows
    process_rows: ProcessRows = ProcessRows.AVERAGED  # the reading of nvml.h it answers with
    idle_watts: float = 70.0
    max_watts: float = 700.0
    sm_clock_max_mhz: int = 1980
    sm_clock_idle_mhz: int = 345
    mem_clock_mhz: int = 2619
    pcie_replay_counter: int = 0
    pcie_kbps_busy: tuple[int, int] = (2_000_000, 6_000_000)  # (TX, RX) KB/s at full activity
    nvlinks: int = 18  # H100 SXM; 0: a PCIe card without NVLink
    nvlink_kib_per_s_busy: float = 50e6  # each direction, all links, at full activity
    remapped_rows: tuple[int, int, int, int] = (0, 0, 0, 0)  # corr, unc, pending, failure
    encoder_util: int = 0
    decoder_util: int = 0
    processes: list[SimProcess] = field(default_factory=list)
    sample_period_s: float = 1.0
    buffer_s: float = 600.0  # how much history the driver keeps
    # Running state, advanced by `advance`.
    samples: SampleBuffer = field(default_factory=lambda: SampleBuffer(600.0))
    utilization_answers: int = 0  # non-empty process-utilization answers so far (for the junk)
    injected_rows: list[UtilizationRow] = field(default_factory=list)  # see inject_samples
    energy_mj: float = 0.0
    nvlink_kib: list[float] = field(default_factory=lambda: [0.0, 0.0])  # TX, RX since load
    gpm: dict[int | None, list[float]] = field(default_factory=dict)  # gi -> [gr, tensor, dram]
    last_util: tuple[float, float] = (0.0, 0.0)  # (sm, mem) over the last period
    temperature_c: float = 32.0
    advanced_to: int | None = None  # the last period boundary integrated (period number)
    sampled_to: int = 0  # the last period whose process samples are taken (one ahead)
    _pending: dict[int, list[tuple[SimProcess, float, float]]] = field(
        default_factory=dict, repr=False
    )

    @property
    def mig_enabled(self) -> bool:
        return self.mig is not None

    def instance(self, gpu_instance_id: int) -> SimMigInstance | None:
        for inst in self.mig or ():
            if inst is not None and inst.gpu_instance_id == gpu_instance_id:
                return inst
        return None

    def live_processes(self, t: float, gpu_instance_id: int | None = None) -> list[SimProcess]:
        return [
            p
            for p in self.processes
            if p.alive(t) and (gpu_instance_id is None or p.gpu_instance_id == gpu_instance_id)
        ]

    def memory_used(self, t: float, gpu_instance_id: int | None = None) -> int:
        return sum(p.memory_bytes(t) for p in self.live_processes(t, gpu_instance_id))

    def power_watts(self) -> float:
        return self._watts(self.last_util[0])

    def _watts(self, sm: float) -> float:
        return self.idle_watts + (self.max_watts - self.idle_watts) * sm

    def energy_mj_at(self, now: float) -> float:
        """The energy counter at `now`: every period integrated, plus the one in progress up to
        `now` at the power of its activity."""
        self.advance(now)
        k = (self.advanced_to or 0) + 1
        into = max(0.0, now - (k - 1) * self.sample_period_s)
        return self.energy_mj + self._watts(self._totals(self._activity(k))[0]) * into * 1000.0

    def pcie_kbps(self, counter: int) -> int:
        """PCIe throughput over the driver's last 20 ms window, in KB/s (TX 0, RX 1)."""
        return round(self.pcie_kbps_busy[counter] * self.last_util[1]) + 100

    def sm_clock_mhz(self) -> int:
        busy = self.last_util[0] > 0
        return self.sm_clock_max_mhz if busy else self.sm_clock_idle_mhz

    def advance(self, now: float) -> None:
        """Integrate every sample period that ended at or before `now`. The processes' samples
        of the period in progress are taken too: each becomes visible once its (staggered)
        timestamp has passed, as a sample the driver recorded at that moment."""
        period = self.sample_period_s
        last_k = math.floor(now / period)
        if self.advanced_to is None:
            self.samples.buffer_s = self.buffer_s
            self.advanced_to = self.sampled_to = last_k - WARMUP_PERIODS
        first_k = self.advanced_to + 1
        max_periods = int(self.buffer_s / period)
        if last_k - first_k + 1 > max_periods:  # a long jump: integrate the gap coarsely
            skipped = last_k - max_periods - first_k + 1
            self._integrate(first_k, skipped * period, self._activity(first_k))
            first_k = last_k - max_periods + 1
            self.sampled_to = max(self.sampled_to, first_k - 1)
        for k in range(first_k, last_k + 2):
            activity = self._activity(k)
            if k > self.sampled_to:
                self._record_samples(k, activity)
            if k <= last_k:
                self._integrate(k, period, activity)
                self._pending.pop(k, None)
            else:
                self._pending[k] = activity
        self.advanced_to = max(self.advanced_to, last_k)
        self.samples.expire(now)

    def _activity(self, k: int) -> list[tuple[SimProcess, float, float]]:
        """Every live process's (sm, mem) over period k, evaluated at its middle, once."""
        cached = self._pending.get(k)
        if cached is not None:
            return cached
        mid = (k - 0.5) * self.sample_period_s
        return [(proc, *proc.activity(mid)) for proc in self.live_processes(mid)]

    def _record_samples(self, k: int, activity: list[tuple[SimProcess, float, float]]) -> None:
        self.sampled_to = k
        if self.mig_enabled:  # NVML keeps no per-process samples under MIG
            return
        period_us = round(self.sample_period_s * 1e6)
        boundary_us = k * period_us
        for proc, sm, mem in activity:
            self.samples.record(proc.pid, boundary_us, period_us, sm, mem)

    def _integrate(
        self, k: int, span: float, activity: list[tuple[SimProcess, float, float]]
    ) -> None:
        by_instance: dict[int | None, list[float]] = {}
        for proc, sm, mem in activity:
            acc = by_instance.setdefault(proc.gpu_instance_id, [0.0, 0.0])
            acc[0], acc[1] = acc[0] + sm, acc[1] + mem
        self.last_util = self._totals(activity)
        self.energy_mj += self.power_watts() * span * 1000.0
        if self.nvlinks:  # peer traffic follows compute (all-reduce between steps)
            kib = self.nvlink_kib_per_s_busy * self.last_util[0] * span
            self.nvlink_kib[0] += kib
            self.nvlink_kib[1] += kib * 0.98
        self.temperature_c += (32.0 + 40.0 * self.last_util[0] - self.temperature_c) * 0.1
        self._add_gpm(None, self.last_util, span)
        for gi, (sm, mem) in by_instance.items():
            if gi is not None:
                self._add_gpm(gi, (min(1.0, sm), min(1.0, mem)), span)

    def _totals(self, activity: list[tuple[SimProcess, float, float]]) -> tuple[float, float]:
        """The GPU's (sm, mem) activity over a period from its processes'."""
        total_sm = sum(sm for _, sm, _ in activity)
        total_mem = sum(mem for _, _, mem in activity)
        if self.mig is not None:  # instances share the GPU's slices
            total_sm, total_mem = total_sm / len(self.mig), total_mem / len(self.mig)
        return min(1.0, total_sm), min(1.0, total_mem)

    def _add_gpm(self, gi: int | None, util: tuple[float, float], span: float) -> None:
        counters = self.gpm.setdefault(gi, [0.0, 0.0, 0.0])
        counters[0] += util[0] * span  # graphics engine active
        counters[1] += util[0] * 0.7 * span  # tensor pipes: a fixed share of busy time
        counters[2] += util[1] * span  # DRAM active


def gpu_uuid(seed: int, index: int, prefix: str = "GPU") -> str:
    """A stable NVML-style UUID (`GPU-xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx`)."""
    h = f"{_mix(seed * 1000003 + index):016x}{_mix(seed * 7919 + index + 17):016x}"
    return f"{prefix}-{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:32]}"


def _mix(x: int) -> int:
    """splitmix64: a cheap, well-spread hash of an integer."""
    x = (x + 0x9E3779B97F4A7C15) & 0xFFFFFFFFFFFFFFFF
    x = ((x ^ (x >> 30)) * 0xBF58476D1CE4E5B9) & 0xFFFFFFFFFFFFFFFF
    x = ((x ^ (x >> 27)) * 0x94D049BB133111EB) & 0xFFFFFFFFFFFFFFFF
    return x ^ (x >> 31)


def h100(index: int, seed: int = 0, *, mig: bool = False) -> SimGpu:
    """An H100 80GB HBM3 at PCI bus 0x18 + index; with `mig`, seven 1g.10gb instances."""
    uuid = gpu_uuid(seed, index)
    instances: list[SimMigInstance | None] | None = None
    if mig:
        instances = [
            SimMigInstance(
                gpu_instance_id=7 + slot,  # the driver numbers 1g instances from 7
                compute_instance_id=0,
                profile="1g.10gb",
                uuid=gpu_uuid(seed, index * 100 + slot + 1, "MIG"),
                memory_total=9856 * MIB,
            )
            for slot in range(7)
        ]
    return SimGpu(
        index=index,
        uuid=uuid,
        pci_bus_id=f"00000000:{0x18 + index * 0x10:02X}:00.0",
        minor=index,
        mig=instances,
    )
