"""The sharing inputs read from a real Prometheus: who shares which GPU, memory bytes, node load.

n1 has one time-sliced GPU (GPU-a) held by two pods (the exporter labels both with the physical
UUID), and a MIG instance (GPU-m, GPU_I_ID 3) held by a third; a fourth pod holds GPU-a but has no
utilization sample yet. Device memory is served in MiB (DCGM_FI_DEV_FB_USED/FREE), and GPU-a's
utilization has 15 days of history, busy 60% from 09:00 to 17:00 UTC and 10% otherwise.
"""

from __future__ import annotations

import math
import time
from collections.abc import Iterator

import numpy as np
import pytest
from promserver import PromServer, openmetrics, start_prometheus

import gpu_contract as gc
from reclaimer.model import PodGpuUsage
from reclaimer.prometheus.client import PromClient
from reclaimer.prometheus.history import MIB, node_stats, node_stats_queries
from reclaimer.prometheus.sharing import (
    LOAD_STEP,
    load_histories,
    load_query,
    load_range,
    pod_gpu_queries,
    pod_gpus,
)

pytestmark = [pytest.mark.prometheus, pytest.mark.slow]
DAYS = 15
GIB = 1024.0**3


@pytest.fixture(scope="module")
def now() -> float:
    return time.time()


def _pod(ns: str, pod: str, uuid: str, instance: str = "") -> dict[str, str]:
    lab = {"namespace": ns, "pod": pod, "container": "c", "gpu": "0", "UUID": uuid}
    lab["Hostname"] = "n1"
    return {**lab, **({"GPU_I_ID": instance} if instance else {})}


def _office_hours(t: float) -> float:
    return 60.0 if 9 <= (t % 86400) / 3600 < 17 else 10.0


@pytest.fixture(scope="module")
def prom(tmp_path_factory: pytest.TempPathFactory, now: float) -> Iterator[PromServer]:
    recent = np.arange(now - 1200, now - 15, 30.0)
    long = np.arange(now - DAYS * 86400, now - 15, 600.0)
    dev = {"gpu": "0", "UUID": "GPU-a", "Hostname": "n1", "modelName": "T4"}
    series = [
        (gc.DCGM_GPU_UTIL, dev, [(float(t), _office_hours(t)) for t in long]),
        (gc.DCGM_FB_USED, dev, [(float(t), 6144.0) for t in recent]),
        (gc.DCGM_FB_FREE, dev, [(float(t), 10240.0) for t in recent]),
    ]
    pods = {
        ("ls", "train-0", "GPU-a", ""): (0.5, 4 * GIB),
        ("be", "tune-0", "GPU-a", ""): (0.4, 2 * GIB),
        ("be", "small-0", "GPU-m", "3"): (0.9, 1 * GIB),
        ("be", "starting-0", "GPU-a", ""): (None, None),
    }
    for (ns, pod, uuid, instance), (busy, memory) in pods.items():
        lab = _pod(ns, pod, uuid, instance)
        series.append((gc.POD_ALLOCATED, lab, [(float(t), 1.0) for t in recent]))
        if busy is not None:
            series.append((gc.POD_UTILIZATION, lab, [(float(t), busy) for t in recent]))
        if memory is not None:
            series.append((gc.POD_MEMORY, lab, [(float(t), memory) for t in recent]))
    with start_prometheus(tmp_path_factory.mktemp("prom"), history=openmetrics(series)) as s:
        yield s


async def test_pods_sharing_a_gpu_read_with_their_busy_share_and_memory(
    prom: PromServer, now: float
) -> None:
    async with PromClient(prom.url) as client:
        queries = pod_gpu_queries(600.0)
        results = {k: await client.query(q, at=now) for k, q in queries.items()}
    assert pod_gpus(results) == (
        PodGpuUsage("be/starting-0", "n1", "GPU-a", None, None),
        PodGpuUsage("be/tune-0", "n1", "GPU-a", 0.4, 2 * GIB),
        PodGpuUsage("ls/train-0", "n1", "GPU-a", 0.5, 4 * GIB),
        PodGpuUsage("be/small-0", "n1", "GPU-m/3", 0.9, 1 * GIB),
    )


async def test_device_memory_is_read_in_bytes(prom: PromServer, now: float) -> None:
    async with PromClient(prom.url) as client:
        results = {k: await client.query(q, at=now) for k, q in node_stats_queries(600).items()}
    (gpu,) = node_stats(results)["n1"]
    assert gpu.uuid == "GPU-a" and gpu.memory_used_ratio == pytest.approx(0.375)
    assert gpu.memory_used_bytes == 6144 * MIB and gpu.memory_total_bytes == 16 * GIB


async def test_node_load_history_is_hourly_and_ends_at_the_last_whole_hour(
    prom: PromServer, now: float
) -> None:
    first, last = load_range(now)
    async with PromClient(prom.url) as client:
        result = await client.query_range(load_query(), first, last, LOAD_STEP)
    history = load_histories(result, first, last)["n1"]
    assert history.step == LOAD_STEP and now - history.end < LOAD_STEP
    assert len(history.values) == DAYS * 24
    # the hour before each evaluation time: office hours read 60%, nights 10%
    assert sum(math.isnan(v) for v in history.values) <= 1  # the first hour may hold no sample
    for i, v in enumerate(history.values):
        hour = ((first + (i - 1) * LOAD_STEP) % 86400) // 3600  # the value covers the hour before
        if 9 <= hour < 16 and not math.isnan(v):
            assert v == pytest.approx(0.6, abs=0.01)
        elif (hour < 8 or hour >= 18) and not math.isnan(v):
            assert v == pytest.approx(0.1, abs=0.01)
