"""The collect loop: sample, attribute, snapshot, render, publish; once per interval.

An asyncio task runs `collect_once` in a daemon worker thread every `interval` seconds on a fixed
grid (an overrun skips ticks instead of piling up). A cycle reads the devices, then the
attribution inputs (`exporter.inputs`: kubelet allocations, the node's pods, each process's
cgroup), computes per-pod usage (`attribution.attribute`, pure), freezes everything into a
`NodeSnapshot`, renders it once and publishes the result with one reference assignment; scrapes
read that reference and nothing else. The thread is a daemon so that a call stuck in the driver
cannot keep the process from exiting; the loop waits on it, and `/healthz` (`exporter.health`)
reports the wait.

Failures are contained: a failing attribution input marks its collector failed (self-metric
`gpu_exporter_collector_success{collector}` 0, `gpu_exporter_errors_total{call}` +1) and the cycle
publishes device metrics anyway; an exception that escapes a whole cycle is logged and counted
(`gpu_exporter_errors_total{call="collect_cycle"}`, `gpu_exporter_collector_success{collector=
"cycle"}` 0) and the previous snapshot is published again with those self-metrics, its
measurements dropped once it is stale (`exporter.health.without_measurements`).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from types import MappingProxyType

from exporter import health, render
from exporter.daemon_thread import in_daemon_thread
from exporter.inputs import AttributionInputs, AttributionSources, Cycle
from exporter.model import DeviceReading, NodeSnapshot, PodUsage
from exporter.sources import DeviceSource, DeviceSweep

log = logging.getLogger(__name__)

__all__ = ["AttributionSources", "CollectLoop", "Published"]

CALL_DEVICES = "device_read"
CALL_CYCLE = "collect_cycle"
CYCLE = "cycle"
STOP_WAIT_S = 5.0  # how long a stop waits for the cycle in flight before abandoning it


@dataclass(frozen=True)
class Published:
    snapshot: NodeSnapshot
    exposition: render.Exposition


class CollectLoop:
    """The loop of the module docstring: `run` drives it, `collect_once` is one cycle, and
    `published` is what scrapes serve."""

    def __init__(
        self,
        devices: DeviceSource,
        attribution: AttributionSources | None,
        *,
        hostname: str,
        interval: float = 1.0,
        clock: Callable[[], float] = time.time,
        families: frozenset[str] | None = None,
        timer: Callable[[], float] = time.perf_counter,
    ) -> None:
        self._devices = devices
        self._families = families  # the DCGM families to render (None: all)
        devices.watch(families)  # and to read: NVML calls no chosen family needs are left out
        self._attribution = attribution
        self._hostname = hostname
        self.interval = interval
        self._clock = clock  # when (snapshot times, liveness and readiness ages)
        self._timer = timer  # how long a cycle took (`health` widens its bounds by that)
        self._errors: dict[str, int] = {}
        self._inputs = AttributionInputs()
        self.published: Published | None = None  # swapped whole; read by the server
        self.started_at = clock()
        self.last_completed_at: float | None = None  # a cycle ended, successfully or not
        self.last_duration: float | None = None

    def liveness(self) -> str | None:
        """None while cycles complete in time, else why not (see `exporter.health`)."""
        return health.liveness(
            self._clock(),
            self.started_at,
            self.last_completed_at,
            self.interval,
            self.last_duration,
        )

    def readiness(self) -> str | None:
        """None while the data served is fresh, else why not."""
        published = self.published
        taken_at = published.snapshot.taken_at if published is not None else None
        return health.readiness(self._clock(), taken_at, self.interval, self.last_duration)

    def collect_once(self) -> Published:
        """Blocking: one full cycle. Returns what to publish (also publishes it)."""
        started = self._timer()
        try:
            return self._collect(started)
        finally:
            self.last_completed_at = self._clock()
            self.last_duration = self._timer() - started

    def cycle_failed(self) -> None:
        """Count a cycle that raised, and publish the previous snapshot again with the updated
        self-metrics (its measurements dropped once stale); nothing before a first snapshot."""
        self._errors[CALL_CYCLE] = self._errors.get(CALL_CYCLE, 0) + 1
        previous = self.published
        if previous is None:
            return
        snapshot = previous.snapshot
        if self.readiness() is not None:
            snapshot = health.without_measurements(snapshot)
        snapshot = replace(
            snapshot,
            collector_success=MappingProxyType({**snapshot.collector_success, CYCLE: False}),
            errors_total=MappingProxyType(dict(self._errors)),
        )
        self.published = Published(snapshot, render.exposition(snapshot, self._families))

    def _collect(self, started: float) -> Published:
        cycle = Cycle(success={CYCLE: True})
        sweep = self._read_devices(cycle)
        cycle.success.update(sweep.collector_success)
        for call, n in sweep.errors.items():
            cycle.fail(None, call, n)
        pods = self._attribute(sweep.devices, cycle)
        for call, n in cycle.errors.items():
            self._errors[call] = self._errors.get(call, 0) + n
        snapshot = NodeSnapshot(
            hostname=self._hostname,
            taken_at=self._clock(),
            duration_seconds=self._timer() - started,
            devices=sweep.devices,
            pods=pods,
            collector_success=MappingProxyType(cycle.success),
            errors_total=MappingProxyType(dict(self._errors)),
        )
        published = Published(snapshot, render.exposition(snapshot, self._families))
        self.published = published
        return published

    def _read_devices(self, cycle: Cycle) -> DeviceSweep:
        try:
            return self._devices.read()
        except Exception:
            log.exception("reading devices failed")
            cycle.fail("devices", CALL_DEVICES)
            return DeviceSweep(devices=())

    def _attribute(self, devices: tuple[DeviceReading, ...], cycle: Cycle) -> tuple[PodUsage, ...]:
        src = self._attribution
        if src is None:
            return ()
        return self._inputs.read(src, devices, cycle)

    async def run(self, stop: asyncio.Event) -> None:
        """Collect every `interval` until `stop` is set. Never raises for a failed cycle."""
        loop = asyncio.get_running_loop()
        next_at = loop.time()
        while not stop.is_set():
            pending = asyncio.ensure_future(in_daemon_thread(self.collect_once))
            stopping = asyncio.ensure_future(stop.wait())
            await asyncio.wait({pending, stopping}, return_when=asyncio.FIRST_COMPLETED)
            if not pending.done():  # asked to stop mid-cycle: give it a moment, then leave it
                await asyncio.wait({pending}, timeout=STOP_WAIT_S)
            stopping.cancel()
            if not pending.done():
                log.warning("a collect cycle is stuck (in NVML?); exiting without it")
                pending.cancel()
                return
            if pending.exception() is not None:
                log.error(
                    "collect cycle failed; serving the previous snapshot",
                    exc_info=pending.exception(),
                )
                self.cycle_failed()
            next_at += self.interval
            now = loop.time()
            next_at = max(next_at, now)  # overran: skip the missed ticks rather than bursting
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(stop.wait(), timeout=next_at - now)
