"""Per-pod utilization on a time-sliced GPU under both readings of nvml.h's process utilization
(one averaged row per process, or one row per process per busy sample period): each pod within
NVML's whole percent (0.005 per process) of its true time average over 15 s collect intervals,
as docs/exporter.md states, while the share of the GPU shifts between the pods inside every
interval. Through the real path: the emulator, `NvmlSource`, the fixture files, attribution."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from exporter_fakes import GIB, Clock

from exporter.cycle import AttributionSources, CollectLoop
from exporter.node.podresources import AllocationsFile
from exporter.node.pods import PodsFile
from exporter.sim.backend import SimNode, make_pods, sim_gpus
from exporter.sim.nvml.sampling import ProcessRows
from exporter.sim.workloads import PodState, Shape, WorkloadSpec

T0 = 1_700_000_000.0
INTERVAL = 15.0
PER_PROCESS = 0.005  # NVML answers whole percents


def _into(t: float) -> float:
    """Seconds into the collect interval that holds t (the reads come every 15 s from T0)."""
    return (t - T0) % INTERVAL


def _state(demand: Callable[[float], float]) -> Callable[[float], PodState]:
    return lambda t: PodState(demand(t), True, GIB)


# The GPU stays saturated while its time moves between pods: `a` has most of it for the first
# 5 s of each interval, `b` for the last 10; `c` holds a steady fifth; `d` runs one sample period
# per interval (a lone row under either reading). Every process runs all the time.
PODS = {
    "a": _state(lambda t: 0.6 if _into(t) < 5 else 0.2),
    "b": _state(lambda t: 0.2 if _into(t) < 5 else 0.6),
    "c": _state(lambda t: 0.2),
    "d": _state(lambda t: 0.5 if 3 <= _into(t) < 4 else 0.0),
}


# A GPU that ends each interval quiet: `hot` is busy 80% for its first 10 s, `cold` 10% always.
# The device's own value at the read is then cold's 10% (the driver's last sample period), while
# hot was busy for two thirds of the interval: its pod must read 0.533, not a share of 10%.
QUIET_AT_THE_END = {
    "hot": _state(lambda t: 0.8 if _into(t) < 10 else 0.0),
    "cold": _state(lambda t: 0.1),
}


def shared_gpu(
    tmp_path: Path, rows: ProcessRows, pods: dict[str, Callable[[float], PodState]] = PODS
) -> tuple[CollectLoop, SimNode, Clock]:
    clock = Clock(T0)
    specs = [WorkloadSpec("ml", pod, "main", Shape.CONSTANT, shared=True) for pod in pods]
    node = SimNode(
        sim_gpus(1, 0, 0, rows), make_pods(specs, 0, list(pods.values())), seed=0, clock=clock
    )
    parts = node.write_fixtures(tmp_path)
    assert parts.podresources_file is not None and parts.pods_file is not None
    sources = AttributionSources(
        AllocationsFile(parts.podresources_file), PodsFile(parts.pods_file), parts.proc_root
    )
    return CollectLoop(parts.devices, sources, hostname="n", clock=clock), node, clock


def test_time_sliced_pods_read_their_time_average_under_both_readings(
    tmp_path: Path, process_rows: ProcessRows
) -> None:
    loop, node, clock = shared_gpu(tmp_path, process_rows)
    loop.collect_once()
    for _ in range(4):
        start = clock.now
        clock.now += INTERVAL
        snapshot = loop.collect_once().snapshot
        by_device = node.expected_by_device(start, clock.now)
        assert all("::" in device for *_, device in by_device)  # replicas of one GPU
        truth = {pod: value for (_, pod, _), value in by_device.items()}
        got = {u.ref.pod: u for u in snapshot.pods}
        assert set(got) == set(PODS)
        for pod, expected in truth.items():
            assert got[pod].processes == 1
            assert abs(got[pod].utilization - expected) <= PER_PROCESS + 1e-9, (pod, expected)
        # The shares moved inside the interval (d's period oversubscribes the GPU: all scaled by
        # 1/1.5 then), so one period's value would be far from any pod's average.
        assert truth["a"] == pytest.approx((4 * 0.6 + 0.6 / 1.5 + 10 * 0.2) / INTERVAL)
        assert truth["b"] == pytest.approx((4 * 0.2 + 0.2 / 1.5 + 10 * 0.6) / INTERVAL)
        assert truth["d"] == pytest.approx(0.5 / 1.5 / INTERVAL)


def test_a_gpu_quiet_at_the_read_does_not_scale_down_a_pod_busy_through_the_interval(
    tmp_path: Path, process_rows: ProcessRows
) -> None:
    loop, node, clock = shared_gpu(tmp_path, process_rows, QUIET_AT_THE_END)
    loop.collect_once()
    for _ in range(3):
        start = clock.now
        clock.now += INTERVAL
        snapshot = loop.collect_once().snapshot
        truth = {pod: v for (_, pod, _), v in node.expected_by_device(start, clock.now).items()}
        assert truth["hot"] == pytest.approx(0.8 * 10 / INTERVAL)
        (device,) = snapshot.devices
        assert device.values["DCGM_FI_DEV_GPU_UTIL"] == pytest.approx(10, abs=1)  # cold alone
        got = {u.ref.pod: u.utilization for u in snapshot.pods}
        for pod, expected in truth.items():
            assert abs(got[pod] - expected) <= PER_PROCESS + 1e-9, (pod, got[pod], expected)
