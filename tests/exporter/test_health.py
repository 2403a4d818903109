"""Liveness and readiness: the pure rules, and the served endpoints of a collect loop whose NVML
call hangs or whose cycles fail (real aiohttp server on loopback, real `NvmlSource` on the
emulator). The loops run for real, on clocks the tests move: ages and cycle durations are read
from those, never from how fast the machine happens to be."""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import AsyncIterator, Callable, Iterable
from contextlib import asynccontextmanager
from dataclasses import asdict, replace
from pathlib import Path
from types import MappingProxyType

import aiohttp
import pytest
from aiohttp.test_utils import TestServer
from exporter_fakes import Clock, ScriptedDevices, alloc, gpu, proc, uid, write_proc
from prometheus_client.parser import text_string_to_metric_families

from exporter import health
from exporter.cycle import AttributionSources, CollectLoop
from exporter.node.podresources import AllocationsFile
from exporter.node.pods import PodLookup
from exporter.nvml.source import NvmlSource
from exporter.server import make_app
from exporter.sim.nvml.device import h100
from exporter.sim.nvml.library import SimNvml
from exporter.sources import DeviceSweep, PodIndex

T0 = 1_700_000_000.0
GIVE_UP_S = 60.0  # only a loop that hangs takes this long, even on a busy machine


@pytest.mark.parametrize(
    ("now", "completed", "duration", "alive"),
    [
        pytest.param(T0 + 2.9, T0, None, True, id="within-three-intervals"),
        pytest.param(T0 + 3.1, T0, None, False, id="three-intervals-late"),
        pytest.param(T0 + 20.0, T0, 8.0, True, id="slow-node-cycles-count"),
        pytest.param(T0 + 30.0, None, None, True, id="first-cycle-grace"),
        pytest.param(T0 + 61.0, None, None, False, id="first-cycle-never-ends"),
    ],
)
def test_liveness(now: float, completed: float | None, duration: float | None, alive: bool) -> None:
    assert (health.liveness(now, T0, completed, 1.0, duration) is None) is alive


@pytest.mark.parametrize(
    ("now", "taken", "ready"),
    [
        pytest.param(T0 + 1.0, None, False, id="nothing-yet"),
        pytest.param(T0 + 2.5, T0, True, id="fresh"),
        pytest.param(T0 + 3.5, T0, False, id="stale"),
    ],
)
def test_readiness(now: float, taken: float | None, ready: bool) -> None:
    assert (health.readiness(now, taken, 1.0, 0.01) is None) is ready


@asynccontextmanager
async def served(loop: CollectLoop) -> AsyncIterator[Callable[[str], object]]:
    server = TestServer(make_app(loop), host="127.0.0.1")
    await server.start_server()
    try:
        async with aiohttp.ClientSession() as http:

            async def get(path: str) -> tuple[int, str]:
                async with http.get(f"http://127.0.0.1:{server.port}{path}") as r:
                    return r.status, await r.text()

            yield get
    finally:
        await server.close()


def still() -> float:
    """A cycle timer that never moves: each cycle takes no time, whatever the machine's pace."""
    return 0.0


async def test_a_hung_nvml_call_fails_healthz_until_it_returns() -> None:
    clock = Clock(T0)
    lib = SimNvml([h100(0)], clock=clock)
    source = NvmlSource(lib, clock=clock)
    loop = CollectLoop(source, None, hostname="n", interval=0.05, clock=clock, timer=still)
    stop = asyncio.Event()
    async with served(loop) as get:
        loop_task = asyncio.create_task(loop.run(stop))
        await until(lambda: loop.published is not None)
        assert await get("/healthz") == (200, "ok\n")
        lib.inject_hang("nvmlDeviceGetPowerUsage")
        await until(lambda: lib.hanging == 1)  # a cycle waits in the driver: none can complete
        clock.now += 1.0  # past the bound, 3 x the 0.05 s interval
        status, reason = await get("/healthz")  # type: ignore[misc]
        ready, _ = await get("/readyz")  # type: ignore[misc]
        lib.release_hangs()  # the call returns (GpuIsLost) and cycles complete again
        lib.clear_faults()
        after = await poll(get, "/healthz", 200)
        stop.set()
        await asyncio.wait_for(loop_task, GIVE_UP_S)
    assert status == 503 and "the last collect cycle completed 1.0 s ago" in reason
    assert ready == 503
    assert after == (200, "ok\n")


async def poll(get: Callable[[str], object], path: str, status: int) -> tuple[int, str]:
    """GET `path` until it answers `status`, or fail at a deadline (never a fixed sleep: the
    shared machine may run the loop late by seconds)."""
    deadline = time.monotonic() + GIVE_UP_S
    while True:
        answer: tuple[int, str] = await get(path)  # type: ignore[misc]
        if answer[0] == status:
            return answer
        assert time.monotonic() < deadline, f"{path} still answers {answer}"
        await asyncio.sleep(0.02)


class FailingPods:
    """A pod source whose lookups raise once `broken` is set: an exception escapes the cycle."""

    def __init__(self) -> None:
        self.broken = False

    def want(self, uids: Iterable[str]) -> None:
        pass

    def lookup(self) -> PodLookup:
        if self.broken:
            raise RuntimeError("a bug nobody expected")
        return PodLookup(PodIndex(MappingProxyType({})), ok=True)

    def close(self) -> None:
        pass


def sample(text: str, name: str, **labels: str) -> float | None:
    for family in text_string_to_metric_families(text):
        for s in family.samples:
            if s.name == name and labels.items() <= s.labels.items():
                return float(s.value)
    return None


async def until(check: Callable[[], bool]) -> None:
    """Until `check()` holds; the deadline only gives up on a loop that hangs."""
    deadline = time.monotonic() + GIVE_UP_S
    while not check():
        assert time.monotonic() < deadline, "condition never met"
        await asyncio.sleep(0.01)


async def test_failing_cycles_are_counted_and_their_stale_data_is_not_served_as_idle(
    tmp_path: Path,
) -> None:
    clock = Clock(T0)
    device = replace(
        gpu(0, processes=(proc(101, 0.0),), values={"DCGM_FI_DEV_GPU_UTIL": 0.0}),
        xid_counts=MappingProxyType({13: 2}),
    )
    (tmp_path / "proc").mkdir()
    write_proc(tmp_path / "proc", 101, uid(1))
    rows = [{**asdict(alloc("ns", "idle-pod", device.uuid)), "device_ids": [device.uuid]}]
    (tmp_path / "podresources.json").write_text(json.dumps(rows))
    pods = FailingPods()
    sources = AttributionSources(
        AllocationsFile(tmp_path / "podresources.json"), pods, tmp_path / "proc"
    )
    devices = ScriptedDevices(lambda: DeviceSweep((device,)))
    loop = CollectLoop(devices, sources, hostname="n", interval=0.02, clock=clock, timer=still)
    stop = asyncio.Event()
    async with served(loop) as get:
        loop_task = asyncio.create_task(loop.run(stop))
        await until(lambda: loop.published is not None)
        text = (await get("/metrics"))[1]  # type: ignore[index]
        assert sample(text, "gpu_pod_utilization_ratio", pod="idle-pod") == 0
        assert sample(text, "gpu_xid_errors_total", xid="13") == 2
        pods.broken = True
        clock.now += 0.03  # within three 0.02 s intervals
        reads = devices.reads
        await until(lambda: devices.reads > reads + 2)
        _, text = await get("/metrics")  # type: ignore[misc]
        assert sample(text, "gpu_exporter_errors_total", call="collect_cycle") >= 1  # type: ignore[operator]
        assert sample(text, "gpu_exporter_collector_success", collector="cycle") == 0
        assert sample(text, "gpu_pod_utilization_ratio", pod="idle-pod") == 0  # still fresh
        assert (await get("/readyz"))[0] == 200  # type: ignore[index]
        clock.now += 0.1
        reads = devices.reads
        await until(lambda: devices.reads > reads + 2)
        _, text = await get("/metrics")  # type: ignore[misc]
        ready = await get("/readyz")
        live = await get("/healthz")
        stop.set()
        await asyncio.wait_for(loop_task, GIVE_UP_S)
    assert ready[0] == 503 and "collected 0.1 s ago" in ready[1]  # type: ignore[index]
    assert live == (200, "ok\n")  # cycles do complete: the process is alive
    assert sample(text, "gpu_pod_utilization_ratio", pod="idle-pod") is None  # unknown, not idle
    assert sample(text, "gpu_pod_allocated", pod="idle-pod") == 1
    assert sample(text, "DCGM_FI_DEV_GPU_UTIL") is None
    assert sample(text, "gpu_xid_errors_total", xid="13") is None  # stale: measured, so dropped
    assert sample(text, "gpu_exporter_last_collect_timestamp_seconds") == T0
