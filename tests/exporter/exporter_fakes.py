"""Small builders, a settable clock, a scripted `DeviceSource` and an emulated node read through
the real `NvmlSource`, for the exporter's tests."""

from __future__ import annotations

import importlib.util
import subprocess
from collections.abc import Callable, Mapping
from pathlib import Path
from types import MappingProxyType

import gpu_contract as gc
from exporter.model import DeviceReading, MigInfo, ProcessUsage
from exporter.nvml.source import NvmlSource
from exporter.sim.backend import SimNode, build_sim_backend
from exporter.sim.nvml.device import SimGpu, SimProcess, h100
from exporter.sim.nvml.library import SimNvml
from exporter.sim.nvml.sampling import ProcessRows
from exporter.sources import Allocation, BackendParts, DeviceSweep

DRIVER = "550.54.15"
MODEL = "NVIDIA H100 80GB HBM3"
GIB = 1 << 30


def pynvml_source() -> Path:
    """nvidia-ml-py's pynvml.py (a dependency), found without importing it: the emulator's tests
    compare against it, so its absence fails them instead of skipping them."""
    spec = importlib.util.find_spec("pynvml")
    assert spec is not None and spec.origin, "nvidia-ml-py (pynvml) is not installed"
    return Path(spec.origin)


def emulator(clock: list[float], gpus: list[SimGpu]) -> SimNvml:
    """An initialized emulator of `gpus` on a clock the test moves (`clock[0]`)."""
    lib = SimNvml(gpus, clock=lambda: clock[0])
    lib.nvmlInit()
    return lib


def gpu(
    index: int,
    *,
    processes: tuple[ProcessUsage, ...] = (),
    values: Mapping[str, float] | None = None,
    mig: MigInfo | None = None,
    mig_uuid: str | None = None,
    model: str = MODEL,
) -> DeviceReading:
    return DeviceReading(
        index=index,
        uuid=f"GPU-{index:08x}-0000-0000-0000-000000000000",
        pci_bus_id=f"00000000:{index + 0x10:02X}:00.0",
        minor=index,
        model_name=model,
        driver_version=DRIVER,
        mig=mig,
        mig_uuid=mig_uuid,
        values=MappingProxyType(dict(values or {"DCGM_FI_DEV_GPU_UTIL": 100.0})),
        processes=processes,
    )


def mig_instance(
    parent: int, gi: int, *, processes: tuple[ProcessUsage, ...] = ()
) -> DeviceReading:
    return gpu(
        parent,
        processes=processes,
        values={"DCGM_FI_DEV_FB_USED": 100.0},
        mig=MigInfo("1g.10gb", gi, 0, parent),
        mig_uuid=f"MIG-{parent:04x}{gi:04x}-0000-0000-0000-000000000000",
    )


def proc(pid: int, sm: float, mem: int | None = 1 << 20) -> ProcessUsage:
    return ProcessUsage(pid=pid, sm_util=sm, mem_util=0.0, memory_bytes=mem)


def alloc(ns: str, pod: str, *ids: str, container: str = "main") -> Allocation:
    resource = "nvidia.com/mig-1g.10gb" if ids and ids[0].startswith("MIG-") else "nvidia.com/gpu"
    return Allocation(ns, pod, container, resource, ids)


def uid(n: int) -> str:
    return f"{n:08x}-1111-2222-3333-444444444444"


def write_proc(proc_root: Path, pid: int, pod_uid: str, container_id: str = "ab" * 32) -> None:
    """A `<proc_root>/<pid>/cgroup` as a cgroup v2 systemd containerd node writes it."""
    (proc_root / str(pid)).mkdir(parents=True, exist_ok=True)
    slice_uid = pod_uid.replace("-", "_")
    (proc_root / str(pid) / "cgroup").write_text(
        f"0::/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod{slice_uid}.slice/"
        f"cri-containerd-{container_id}.scope\n"
    )


class Clock:
    """An injectable clock that stands still until a test moves `now`."""

    def __init__(self, now: float) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


def busy_gpus(n: int = 2) -> list[SimGpu]:
    """`n` emulated H100s, each with one process keeping half its SMs busy and holding 1 GiB."""
    gpus = [h100(i) for i in range(n)]
    for g in gpus:
        g.processes.append(SimProcess(100 + g.index, sm=lambda t: 0.5, memory_bytes=lambda t: GIB))
    return gpus


class EmulatedNode:
    """Emulated GPUs read through the real `NvmlSource`, on a clock that moves only on `sweep`."""

    def __init__(
        self, gpus: list[SimGpu], *, driver: str = DRIVER, privileged: bool = True
    ) -> None:
        self.now = 10_000.0
        self.lib = SimNvml(
            gpus, clock=lambda: self.now, driver_version=driver, privileged=privileged
        )
        self.source = NvmlSource(self.lib, clock=lambda: self.now)

    def sweep(self, seconds: float = 10.0) -> DeviceSweep:
        self.now += seconds
        return self.source.read()


def sim_node(
    fixture_dir: Path,
    *,
    seed: int = 3,
    gpus: int = 4,
    mig: int = 1,
    pods: int = 12,
    start: float = 1_700_000_000.0,
    process_rows: ProcessRows = ProcessRows.AVERAGED,
) -> tuple[BackendParts, SimNode, Clock]:
    """The `sim` backend with its default workload mix, on a clock standing at `start`."""
    clock = Clock(start)
    parts, node = build_sim_backend(
        gpus=gpus,
        mig=mig,
        pods=pods,
        seed=seed,
        workloads_file=None,
        fixture_dir=fixture_dir,
        node_name="n1",
        clock=clock,
        process_rows=process_rows,
    )
    return parts, node, clock


class ScriptedDevices:
    """A `DeviceSource` whose next sweep comes from a function (or raises what it raises)."""

    def __init__(self, sweep: Callable[[], DeviceSweep]) -> None:
        self.sweep = sweep
        self.reads = 0
        self.closed = False

    def read(self) -> DeviceSweep:
        self.reads += 1
        return self.sweep()

    def watch(self, families: frozenset[str] | None) -> None:
        """Scripted sweeps are whatever the script says: nothing to leave out."""

    def close(self) -> None:
        self.closed = True


def promtool_problems(exposition: str) -> list[str]:
    """`promtool check metrics` findings, less the DCGM-compatibility ones (`gpu_contract`)."""
    result = subprocess.run(
        ["promtool", "check", "metrics"],
        input=exposition,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    return gc.promtool_problems((result.stdout + result.stderr).splitlines(), exposition)
