"""The NVML device source: one sweep of every GPU and MIG instance per collect cycle.

Every NVML call goes through an injected library object (`lib`: the real `pynvml` module, loaded
lazily by `exporter.nvml.library`, or the emulator `exporter.sim.nvml.library`), by pynvml's
names. `NvmlSource.read()` sweeps every GPU and MIG instance once and returns `DeviceReading`s
whose values are keyed by dcgm-exporter's family names, in its units.

Error semantics, per call and per device (`exporter.nvml.calls`): NotFound means "nothing to
report" (no process samples = idle) and is not a failure; NotSupported, FunctionNotFound and
NoPermission disable that call for that device (by UUID and MIG mode, so a MIG toggle asks again)
without failing; any other error marks that reading's collector failed for that device only and
is counted by call name. GpuIsLost also skips the rest of that device's calls in the sweep. One
GPU's failure never hides the others. Uninitialized, DriverNotLoaded or LibRmVersionMismatch end
the sweep: NVML is shut down, every cache dropped, and the next sweep initializes it afresh.

A device whose process list cannot be had (an error, a lost GPU) reads with `processes=None`: its
pods' usage is unknown, never 0. Per-process activity on whole GPUs is read as NVML reports it,
one average per busy process since the GPU's lastSeenTimeStamp (`exporter.nvml.processes`). MIG
instances get per-instance activity from GPM (two samples, one sweep apart), divided evenly
between the instance's processes; without privileges a MIG-enabled GPU refuses its aggregate
memory (NoPermission), and per-instance XID events are not delivered, so instances report no XID
value. On a MIG-enabled GPU the framebuffer families are served by the instances only
(`gpu_contract.dcgm.MigScope`): the GPU's aggregate would repeat their sum, so a `sum()` over a
node would count each byte twice; its memory is still asked for, as the privilege probe. XIDs
arrive as NVML events, drained once per sweep (`exporter.nvml.events`).

`watch(families)` (`--collectors`) leaves out the device readings and the NVLink call whose every
family is unchosen, as dcgm-exporter watches only the fields its counters file names. Identity,
MIG topology, memory, utilization rates, processes, GPM and XID events are always read: the
per-pod and XID-event families, served whatever is chosen, are computed from them.
"""

from __future__ import annotations

import contextlib
import logging
import time
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from types import MappingProxyType
from typing import Any

from exporter.model import DeviceReading, MigInfo, ProcessUsage
from exporter.nvml import library
from exporter.nvml.calls import CallOutcome, DeviceCalls
from exporter.nvml.events import XID_ERRORS, XidReader
from exporter.nvml.gpm import GPM_FAMILIES, GpmReader
from exporter.nvml.nvlink import NVLINK_TOTAL, NvlinkReader
from exporter.nvml.processes import ProcessReader, running, shared_activity
from exporter.nvml.readings import (
    MEMORY,
    MEMORY_V1,
    READINGS,
    NvmlCollector,
    Reading,
)
from exporter.sources import BackendParts, DeviceSweep
from gpu_contract import DEVICE_METRICS, MigScope

# Read on a MIG-enabled GPU, but served by its instances only (the GPU's would repeat their sum).
INSTANCE_ONLY = frozenset(m.name for m in DEVICE_METRICS if m.mig_scope is MigScope.INSTANCES)

NAN = float("nan")
log = logging.getLogger(__name__)


def _text(value: Any) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)


# Collectors read for the per-pod attribution and the device's identity whatever `--collectors`
# chooses (`watch`): they always report their success.
_NOT_TRIMMED = frozenset(
    {
        NvmlCollector.IDENTITY,
        NvmlCollector.PROCESSES,
        NvmlCollector.PROFILING,
        NvmlCollector.MIG,
        NvmlCollector.XID,
    }
)


class NvmlSource:
    """A `DeviceSource` over an NVML library object. Blocking; run it in a thread."""

    def __init__(self, lib: Any = None, *, clock: Callable[[], float] = time.time) -> None:
        self._lib = lib
        self._initialized = False
        self._processes = ProcessReader(clock)
        self.restarts = 0  # NVML re-initializations after its state was lost
        self._readings = READINGS
        self._nvlink_wanted = True
        self._skipped: set[NvmlCollector] = set()
        self._reset()

    def watch(self, families: frozenset[str] | None) -> None:
        """Read only what the `families` served (None: all) and the per-pod attribution need."""
        self._readings = tuple(r for r in READINGS if r.wanted(families))
        self._nvlink_wanted = families is None or NVLINK_TOTAL in families
        # a collector none of whose readings is taken reports no success at all (absent, not 1)
        kept = {r.collector for r in self._readings} | _NOT_TRIMMED
        self._skipped = {r.collector for r in READINGS} - kept
        if not self._nvlink_wanted:
            self._skipped.add(NvmlCollector.NVLINK)

    def _reset(self) -> None:
        """Forget everything learned from the current NVML initialization."""
        self._disabled: dict[tuple[object, str], int] = {}
        self._identity: dict[int, DeviceReading] = {}
        self._driver = ""
        self._processes.reset()
        self._gpm = GpmReader()
        self._xid = XidReader()
        self._nvlink = NvlinkReader()

    @property
    def lib(self) -> Any:
        if self._lib is None:
            self._lib = library.load_pynvml()
        return self._lib

    @property
    def unsupported(self) -> frozenset[tuple[object, str]]:
        """(device key, call + tag) pairs NVML answered NotSupported, FunctionNotFound or
        NoPermission, which the source no longer makes; the key is (UUID, MIG mode) for a GPU,
        the MIG UUID for an instance, None for node-level calls."""
        return frozenset(self._disabled)

    def read(self) -> DeviceSweep:
        errors: dict[str, int] = {}
        devices: list[DeviceReading] = []
        node = DeviceCalls(self.lib, None, self._disabled, errors)
        if not self._initialized:
            self._initialized = node.call(NvmlCollector.IDENTITY, "nvmlInit").ok
        count = (
            node.call(NvmlCollector.IDENTITY, "nvmlDeviceGetCount") if self._initialized else None
        )
        if count is None or not count.ok:
            node.sweep_failed.add(NvmlCollector.IDENTITY)
        else:
            if not self._driver:
                driver = node.call(NvmlCollector.IDENTITY, "nvmlSystemGetDriverVersion")
                self._driver = _text(driver.value) if driver.ok else ""
            self._xid.drain(node)
            for index in range(int(count.value)):
                devices.extend(self._read_gpu(node.child(("index", index)), index))
        success = {
            c.value: c.value not in node.sweep_failed
            for c in NvmlCollector
            if c not in self._skipped
        }
        if node.restart[0] and self._initialized:
            log.warning("NVML lost its state (driver reloaded?): initializing it again")
            self.close()
            self.restarts += 1
        return DeviceSweep(tuple(devices), success, errors)

    def close(self) -> None:
        if self._initialized:
            self._initialized = False
            self._gpm.close(self.lib)
            self._xid.close(self.lib)
            with contextlib.suppress(Exception):
                self.lib.nvmlShutdown()
        self._reset()

    # -- one physical GPU ---------------------------------------------------------------------
    def _read_gpu(self, calls: DeviceCalls, index: int) -> list[DeviceReading]:
        handle = calls.call(NvmlCollector.IDENTITY, "nvmlDeviceGetHandleByIndex", index)
        base = self._identify(calls, index, handle) if handle.ok else self._identity.get(index)
        if base is None:
            return []
        if not handle.ok:  # lost (or worse): nothing about it is known this sweep
            calls.fail(NvmlCollector.PROCESSES)
            return [_with(base, {}, None, calls.failed)]
        calls.key = base.uuid
        mig_mode = calls.call(NvmlCollector.MIG, "nvmlDeviceGetMigMode", handle.value)
        mig_enabled = mig_mode.ok and int(mig_mode.value[0]) == 1
        calls.key = (base.uuid, mig_enabled)
        values: dict[str, float] = {}
        for reading in self._readings:
            if not (mig_enabled and reading.whole_gpu_only):
                values.update(self._reading(calls, reading, handle.value))
        if self._nvlink_wanted:
            values.update(self._nvlink.read(calls, handle.value))
        values.update(self._gpm.read(calls, calls.key, handle.value, None))
        values.update(self._xid.gpu_values(calls, index, handle.value, mig_enabled))
        xids = self._xid.counts(index, None, mig_enabled) if XID_ERRORS in values else {}
        if not mig_enabled:
            processes = self._processes.gpu_processes(calls, base.uuid, handle.value)
            return [_with(base, values, processes, calls.failed, xids)]
        instances = self._read_mig(calls, base, handle.value)
        gpu_values = {k: v for k, v in values.items() if k not in INSTANCE_ONLY}
        return [_with(base, gpu_values, (), calls.failed, xids), *instances]

    def _identify(
        self, calls: DeviceCalls, index: int, handle: CallOutcome
    ) -> DeviceReading | None:
        if index in self._identity:
            return self._identity[index]
        h = handle.value
        uuid = calls.call(NvmlCollector.IDENTITY, "nvmlDeviceGetUUID", h)
        pci = calls.call(NvmlCollector.IDENTITY, "nvmlDeviceGetPciInfo", h)
        minor = calls.call(NvmlCollector.IDENTITY, "nvmlDeviceGetMinorNumber", h)
        name = calls.call(NvmlCollector.IDENTITY, "nvmlDeviceGetName", h)
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
        if reading.fallback is not None and out.disabled:
            return self._reading(calls, reading.fallback, handle)
        return {}

    # -- MIG ----------------------------------------------------------------------------------
    def _read_mig(
        self, calls: DeviceCalls, base: DeviceReading, parent: Any
    ) -> list[DeviceReading]:
        count = calls.call(NvmlCollector.MIG, "nvmlDeviceGetMaxMigDeviceCount", parent)
        # Without privileges NVML delivers no per-instance XID events (see the module doc); the
        # parent's aggregate memory answering NoPermission is how an unprivileged view shows.
        privileged = not (calls.denied(MEMORY.call, MEMORY.tag) or calls.denied(MEMORY_V1.call))
        out = []
        for slot in range(int(count.value) if count.ok else 0):
            mig = calls.call(NvmlCollector.MIG, "nvmlDeviceGetMigDeviceHandleByIndex", parent, slot)
            if not mig.ok:  # NotFound / InvalidArgument: an empty slot
                continue
            key = (base.uuid, "mig", slot)  # until the instance's UUID is read
            reading = self._read_instance(calls.instance(key), base, parent, mig.value, privileged)
            if reading is not None:
                out.append(reading)
        return out

    def _read_instance(
        self, calls: DeviceCalls, base: DeviceReading, parent: Any, handle: Any, privileged: bool
    ) -> DeviceReading | None:
        gpu_key = (base.uuid, True)
        gi = calls.call(NvmlCollector.MIG, "nvmlDeviceGetGpuInstanceId", handle)
        ci = calls.call(NvmlCollector.MIG, "nvmlDeviceGetComputeInstanceId", handle)
        uuid = calls.call(NvmlCollector.MIG, "nvmlDeviceGetUUID", handle)
        name = calls.call(NvmlCollector.MIG, "nvmlDeviceGetName", handle)
        if not (gi.ok and uuid.ok):
            return None
        calls.key = _text(uuid.value)
        profile = _text(name.value).rsplit(" ", 1)[-1] if name.ok else ""
        values: dict[str, float] = {}
        values.update(self._reading(calls, MEMORY, handle))
        values.update(self._gpm.read(calls, gpu_key, parent, int(gi.value)))
        xids: dict[int, int] = {}
        if privileged:
            values.update(self._xid.instance_values(calls, base.index, int(gi.value)))
            if XID_ERRORS in values:
                xids = self._xid.counts(base.index, int(gi.value), True)
        procs = running(calls, handle)
        processes: tuple[ProcessUsage, ...] | None = None
        if procs is not None:
            gr, dram = (values.get(f, NAN) for f in (GPM_FAMILIES[0], GPM_FAMILIES[2]))
            processes = shared_activity(procs, gr, dram)
        info = MigInfo(profile, int(gi.value), int(ci.value) if ci.ok else 0, base.index)
        reading = _with(base, values, processes, calls.failed, xids)
        return replace(reading, mig=info, mig_uuid=_text(uuid.value))


def _with(
    base: DeviceReading,
    values: dict[str, float],
    processes: tuple[ProcessUsage, ...] | None,
    failed: set[str],
    xids: dict[int, int] | None = None,
) -> DeviceReading:
    return replace(
        base,
        values=values,
        processes=processes,
        failed=frozenset(failed),
        xid_counts=MappingProxyType(xids or {}),
    )


def build_nvml_backend(*, proc_root: Path, lib: Any = None) -> BackendParts:
    """The real node: NVML for devices, the host's /proc, the kubelet and the API for pods."""
    return BackendParts(devices=NvmlSource(lib), proc_root=proc_root)
