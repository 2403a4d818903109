"""The NVML device source: the only module that imports pynvml.

Every NVML call goes through an injected library object (`lib`: the real `pynvml` module,
imported lazily, or `exporter.simnvml`'s emulator), by pynvml's names. `NvmlSource.read()` sweeps
every GPU and MIG instance once and returns `DeviceReading`s whose values are keyed by
dcgm-exporter's family names, in its units.

Error semantics, per call and per device: NotFound means "nothing to report" (no process samples
= idle) and is not a failure; NotSupported disables that call for that device for good (no retry
every cycle, no failure); any other error marks that reading's collector failed for that device
only and is counted by call name. GpuIsLost also skips the rest of that device's calls in the
sweep. One GPU's failure never hides the others.

Per-process utilization integrates every sample since the previous sweep (per-device
lastSeenTimeStamp) into a time average over the interval; see `exporter.process_activity`.
MIG instances get per-instance activity from GPM (two samples, one sweep apart), divided evenly
between the instance's processes. XIDs arrive as NVML events, drained once per sweep
(`exporter.nvml_events`).
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

from exporter.model import DeviceReading, MigInfo, ProcessUsage
from exporter.nvml_calls import CallOutcome, DeviceCalls
from exporter.nvml_events import XidReader
from exporter.nvml_gpm import GPM_FAMILIES, GpmReader
from exporter.nvml_readings import MEMORY, READINGS, Collector, Reading
from exporter.process_activity import Average, Sample, average_by_pid, estimate_period_us
from exporter.sources import BackendParts, DeviceSweep

NAN = float("nan")


def load_pynvml() -> Any:
    import pynvml  # noqa: PLC0415 - lazy: the package works without the NVIDIA library

    return pynvml


def nvml_available(lib: Any = None) -> bool:
    """True when NVML loads, initializes and sees at least one GPU."""
    try:
        lib = lib if lib is not None else load_pynvml()
        lib.nvmlInit()
    except Exception:  # ImportError, NVMLError_LibraryNotFound, DriverNotLoaded, OSError ...
        return False
    try:
        return int(lib.nvmlDeviceGetCount()) > 0
    except Exception:
        return False
    finally:
        with contextlib.suppress(Exception):
            lib.nvmlShutdown()


def _text(value: Any) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)


class NvmlSource:
    """A `DeviceSource` over an NVML library object. Blocking; run it in a thread."""

    def __init__(
        self,
        lib: Any = None,
        *,
        clock: Callable[[], float] = time.time,
        default_period_s: float = 1.0,
    ) -> None:
        self._lib = lib
        self._clock = clock
        self._default_period_us = int(default_period_s * 1e6)
        self._initialized = False
        self._disabled: set[tuple[object, str]] = set()
        self._identity: dict[int, DeviceReading] = {}
        self._driver = ""
        self._started_us = int(clock() * 1e6)
        self._last_seen_us: dict[int, int] = {}
        self._last_read: dict[int, float] = {}
        self._period_us: dict[int, int] = {}
        self._gpm = GpmReader()
        self._xid = XidReader()

    @property
    def lib(self) -> Any:
        if self._lib is None:
            self._lib = load_pynvml()
        return self._lib

    @property
    def unsupported(self) -> frozenset[tuple[object, str]]:
        """(device key, call + tag) pairs NVML answered NotSupported/FunctionNotFound, which the
        source no longer makes; the key is the GPU index, or (index, slot) for a MIG instance."""
        return frozenset(self._disabled)

    def read(self) -> DeviceSweep:
        errors: dict[str, int] = {}
        devices: list[DeviceReading] = []
        node = DeviceCalls(self.lib, None, self._disabled, errors)
        if not self._initialized:
            self._initialized = node.call(Collector.IDENTITY, "nvmlInit").ok
        count = node.call(Collector.IDENTITY, "nvmlDeviceGetCount") if self._initialized else None
        if count is None or not count.ok:
            node.sweep_failed.add(Collector.IDENTITY)
        else:
            if not self._driver:
                driver = node.call(Collector.IDENTITY, "nvmlSystemGetDriverVersion")
                self._driver = _text(driver.value) if driver.ok else ""
            self._xid.drain(node)
            for index in range(int(count.value)):
                calls = DeviceCalls(self.lib, index, self._disabled, errors, node.sweep_failed)
                devices.extend(self._read_gpu(calls, index))
        success = {c.value: c.value not in node.sweep_failed for c in Collector}
        return DeviceSweep(tuple(devices), success, errors)

    def close(self) -> None:
        if self._initialized:
            self._initialized = False
            self._gpm.close(self.lib)
            self._xid.close(self.lib)
            with contextlib.suppress(Exception):
                self.lib.nvmlShutdown()

    # -- one physical GPU ---------------------------------------------------------------------
    def _read_gpu(self, calls: DeviceCalls, index: int) -> list[DeviceReading]:
        handle = calls.call(Collector.IDENTITY, "nvmlDeviceGetHandleByIndex", index)
        base = self._identify(calls, index, handle) if handle.ok else self._identity.get(index)
        if base is None:
            return []
        if not handle.ok:
            return [_with(base, {}, (), calls.failed)]
        mig_mode = calls.call(Collector.MIG, "nvmlDeviceGetMigMode", handle.value)
        mig_enabled = mig_mode.ok and int(mig_mode.value[0]) == 1
        values: dict[str, float] = {}
        for reading in READINGS:
            if mig_enabled and reading.whole_gpu_only:
                continue
            values.update(self._reading(calls, reading, handle.value))
        values.update(self._gpm.read(calls, index, handle.value, None))
        values.update(self._xid.gpu_values(calls, index, handle.value, mig_enabled))
        processes: tuple[ProcessUsage, ...] = ()
        if not mig_enabled:
            processes = self._processes(calls, index, handle.value)
        readings = [_with(base, values, processes, calls.failed)]
        if mig_enabled:
            readings.extend(self._read_mig(calls, base, handle.value))
        return readings

    def _identify(
        self, calls: DeviceCalls, index: int, handle: CallOutcome
    ) -> DeviceReading | None:
        if index in self._identity:
            return self._identity[index]
        h = handle.value
        uuid = calls.call(Collector.IDENTITY, "nvmlDeviceGetUUID", h)
        pci = calls.call(Collector.IDENTITY, "nvmlDeviceGetPciInfo", h)
        minor = calls.call(Collector.IDENTITY, "nvmlDeviceGetMinorNumber", h)
        name = calls.call(Collector.IDENTITY, "nvmlDeviceGetName", h)
        if not uuid.ok:
            return None
        reading = DeviceReading(
            index=index,
            uuid=_text(uuid.value),
            pci_bus_id=_text(pci.value.busId) if pci.ok else "",
            minor=int(minor.value) if minor.ok else index,
            model_name=_text(name.value) if name.ok else "",
            driver_version=self._driver,
        )
        if pci.ok and minor.ok and name.ok:
            self._identity[index] = reading
        return reading

    def _reading(self, calls: DeviceCalls, reading: Reading, handle: Any) -> dict[str, float]:
        args = reading.args(self.lib)
        out = calls.call(reading.collector, reading.call, handle, *args, tag=reading.tag)
        if out.ok:
            return reading.parse(out.value)
        if reading.fallback is not None and calls.is_disabled(reading.call, reading.tag):
            return self._reading(calls, reading.fallback, handle)
        return {}

    def _processes(self, calls: DeviceCalls, index: int, handle: Any) -> tuple[ProcessUsage, ...]:
        now = self._clock()
        running = calls.call(Collector.PROCESSES, "nvmlDeviceGetComputeRunningProcesses", handle)
        memory = {int(p.pid): p.usedGpuMemory for p in running.value} if running.ok else {}
        last_us = self._last_seen_us.get(index, self._started_us)
        got = calls.call(Collector.PROCESSES, "nvmlDeviceGetProcessUtilization", handle, last_us)
        samples = [
            Sample(int(s.pid), int(s.timeStamp), int(s.smUtil), int(s.memUtil))
            for s in (got.value if got.ok else ())
        ]
        known = got.ok or got.idle  # idle: no sample since last time, every process at 0
        averages: dict[int, Average] = {}
        if known:
            stamps = [s.time_stamp_us for s in samples]
            period_us = estimate_period_us(
                stamps, self._period_us.get(index, self._default_period_us)
            )
            self._period_us[index] = period_us
            self._last_seen_us[index] = max([last_us, *stamps])
            interval = now - self._last_read.get(index, self._started_us / 1e6)
            averages = average_by_pid(samples, max(interval, period_us / 1e6), period_us / 1e6)
        self._last_read[index] = now
        usages = []
        for pid in sorted(set(memory) | set(averages)):
            avg = averages.get(pid, Average(0.0, 0.0) if known else Average(NAN, NAN))
            mem = memory.get(pid)
            usages.append(ProcessUsage(pid, avg.sm, avg.mem, None if mem is None else int(mem)))
        return tuple(usages)

    # -- MIG ----------------------------------------------------------------------------------
    def _read_mig(
        self, calls: DeviceCalls, base: DeviceReading, parent: Any
    ) -> list[DeviceReading]:
        count = calls.call(Collector.MIG, "nvmlDeviceGetMaxMigDeviceCount", parent)
        out = []
        for slot in range(int(count.value) if count.ok else 0):
            mig = calls.call(Collector.MIG, "nvmlDeviceGetMigDeviceHandleByIndex", parent, slot)
            if not mig.ok:  # NotFound / InvalidArgument: an empty slot
                continue
            reading = self._read_instance(calls.child((base.index, slot)), base, parent, mig.value)
            if reading is not None:
                out.append(reading)
        return out

    def _read_instance(
        self, calls: DeviceCalls, base: DeviceReading, parent: Any, handle: Any
    ) -> DeviceReading | None:
        gi = calls.call(Collector.MIG, "nvmlDeviceGetGpuInstanceId", handle)
        ci = calls.call(Collector.MIG, "nvmlDeviceGetComputeInstanceId", handle)
        uuid = calls.call(Collector.MIG, "nvmlDeviceGetUUID", handle)
        name = calls.call(Collector.MIG, "nvmlDeviceGetName", handle)
        if not (gi.ok and uuid.ok):
            return None
        profile = _text(name.value).rsplit(" ", 1)[-1] if name.ok else ""
        values: dict[str, float] = {}
        values.update(self._reading(calls, MEMORY, handle))
        values.update(self._gpm.read(calls, base.index, parent, int(gi.value)))
        values.update(self._xid.instance_values(calls, base.index, int(gi.value)))
        running = calls.call(Collector.PROCESSES, "nvmlDeviceGetComputeRunningProcesses", handle)
        procs = list(running.value) if running.ok else []
        share = 1.0 / len(procs) if procs else 0.0
        gr = values.get(GPM_FAMILIES[0], NAN) * share
        dram = values.get(GPM_FAMILIES[2], NAN) * share
        processes = tuple(
            ProcessUsage(
                int(p.pid),
                gr,
                dram,
                None if p.usedGpuMemory is None else int(p.usedGpuMemory),
            )
            for p in procs
        )
        info = MigInfo(profile, int(gi.value), int(ci.value) if ci.ok else 0, base.index)
        return replace(
            base,
            mig=info,
            mig_uuid=_text(uuid.value),
            values=values,
            processes=processes,
            failed=frozenset(calls.failed),
        )


def _with(
    base: DeviceReading,
    values: dict[str, float],
    processes: tuple[ProcessUsage, ...],
    failed: set[str],
) -> DeviceReading:
    return replace(base, values=values, processes=processes, failed=frozenset(failed))


def build_nvml_backend(*, proc_root: Path, lib: Any = None) -> BackendParts:
    """The real node: NVML for devices, the host's /proc, the kubelet and the API for pods."""
    return BackendParts(devices=NvmlSource(lib), proc_root=proc_root)
