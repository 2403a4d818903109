"""The pods' contention read from a REAL Prometheus: busy and co-busy time over the last day.

The exporter's per-pod utilization, one sample a minute over the hour before the read (and a
burst 25 hours before it, out of the window):
- n1 GPU-a (time-sliced): `a/x` busy the last 30 minutes, `a/y` from 50 to 20 minutes ago:
  10 minutes at once. Both were busy together 25 hours ago too, which the day leaves out.
- n1 GPU-b: `a/z` busy all hour, beside `a/x` on the node but not on its GPU.
- n2 GPU-c: `a/solo`, two containers busy all hour: one pod, no neighbour.
- n3 GPU-m, a MIG GPU: `b/m1` (instance 1) and `b/m2` (instance 2) busy all hour, each on a
  device of its own; `b/m3` beside `b/m1` on instance 1, busy the last 15 minutes.
- n1 GPU-d and GPU-e: `c/two` on both, busy all hour (its time sums over them).
A proxy in front of Prometheus can fail one query: a failed co-busy query leaves the read with
no pods, saying why, and the next read asks again; a failed node load query leaves it whole.
"""

from __future__ import annotations

import math
import time
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest
from aiohttp import web
from clusterviews import view
from loopback import forward, serve
from promserver import PromServer, SeriesSpec, openmetrics, start_prometheus

import gpu_contract as gc
from reclaimer.model import PodBusy
from reclaimer.prometheus.client import PromClient
from reclaimer.prometheus.contention import contention_queries
from reclaimer.prometheus.contention_read import read_contention
from reclaimer.prometheus.history import HistoryParams, MetricsSource
from reclaimer.prometheus.reads import read_metrics
from reclaimer.prometheus.sharing import load_query
from reclaimer.runtime.controller import build_snapshot

pytestmark = [pytest.mark.prometheus, pytest.mark.slow]
MIN = 60.0
HOUR = 60  # minutes of samples before the read


@pytest.fixture(scope="module")
def at() -> float:
    """The read's time: half a minute past a whole minute, two minutes ago. The subquery's
    steps fall on whole minutes, the newest at `at - 30`, where the newest sample is."""
    return math.floor(time.time() / MIN) * MIN - 2 * MIN + 30.0


def _lab(ns: str, pod: str, node: str, uuid: str, instance: str = "", c: str = "c") -> dict:
    lab = {"namespace": ns, "pod": pod, "container": c, "UUID": uuid, "Hostname": node}
    return lab | ({"GPU_I_ID": instance} if instance else {})


def _minutes(at: float, busy: range, hours_ago: float = 0.0, n: int = HOUR) -> list[tuple]:
    """One sample a minute, the newest at the last whole minute before `at - hours_ago` (k = 0)
    back to k = n - 1: 0.5 where k is in `busy`, else 0."""
    last = math.floor((at - hours_ago * 3600) / MIN) * MIN
    return [(last - k * MIN, 0.5 if k in busy else 0.0) for k in reversed(range(n))]


def _history(at: float) -> str:
    everywhere = range(HOUR)
    series: list[SeriesSpec] = [
        (gc.POD_UTILIZATION, _lab("a", "x", "n1", "GPU-a"), _minutes(at, range(0, 30))),
        (gc.POD_UTILIZATION, _lab("a", "y", "n1", "GPU-a"), _minutes(at, range(20, 50))),
        (gc.POD_UTILIZATION, _lab("a", "z", "n1", "GPU-b"), _minutes(at, everywhere)),
        (gc.POD_UTILIZATION, _lab("a", "solo", "n2", "GPU-c", c="c1"), _minutes(at, everywhere)),
        (gc.POD_UTILIZATION, _lab("a", "solo", "n2", "GPU-c", c="c2"), _minutes(at, everywhere)),
        (gc.POD_UTILIZATION, _lab("b", "m1", "n3", "GPU-m", "1"), _minutes(at, everywhere)),
        (gc.POD_UTILIZATION, _lab("b", "m2", "n3", "GPU-m", "2"), _minutes(at, everywhere)),
        (gc.POD_UTILIZATION, _lab("b", "m3", "n3", "GPU-m", "1"), _minutes(at, range(0, 15))),
        (gc.POD_UTILIZATION, _lab("c", "two", "n1", "GPU-d"), _minutes(at, everywhere)),
        (gc.POD_UTILIZATION, _lab("c", "two", "n1", "GPU-e"), _minutes(at, everywhere)),
    ]
    for pod in ("x", "y"):  # busy together 25 hours ago, for 10 minutes
        lab = _lab("a", pod, "n1", "GPU-a")
        series.append((gc.POD_UTILIZATION, lab, _minutes(at, range(10), hours_ago=25, n=10)))
    series.sort(key=lambda s: (s[1]["pod"], s[1]["UUID"], s[2][0][0]))
    return openmetrics(series)


EXPECTED = {  # minutes present, busy, co-busy
    "a/x": (60, 30, 10),
    "a/y": (60, 30, 10),
    "a/z": (60, 60, 0),
    "a/solo": (60, 60, 0),
    "b/m1": (60, 60, 15),
    "b/m2": (60, 60, 0),
    "b/m3": (60, 15, 15),
    "c/two": (120, 120, 0),
}


@pytest.fixture(scope="module")
def prom(tmp_path_factory: pytest.TempPathFactory, at: float) -> Iterator[PromServer]:
    work: Path = tmp_path_factory.mktemp("prom-contention")
    with start_prometheus(work, history=_history(at)) as server:
        yield server


def _minutes_of(busy: PodBusy) -> tuple[float, float, float]:
    return busy.present / MIN, busy.busy / MIN, busy.cobusy / MIN


async def test_busy_and_cobusy_time_per_pod_over_the_day(prom: PromServer, at: float) -> None:
    async with PromClient(prom.url) as client:
        read = await read_contention(client, at)
    assert not read.error and read.window == 86400.0
    assert {k: _minutes_of(v) for k, v in read.pods.items()} == EXPECTED


class FailQuery:
    """A loopback proxy that answers `query` 503 while `failing`, else passes on."""

    def __init__(self, target: str, query: str) -> None:
        self.target, self.query, self.failing, self.asked = target, query, True, 0

    async def handle(self, request: web.Request) -> web.Response:
        form = {k: str(v) for k, v in (await request.post()).items()}
        if form.get("query") == self.query:
            self.asked += 1
            if self.failing:
                return web.Response(status=503, text="unavailable")
        return await forward(self.target, request, form)


@pytest.fixture
async def proxy(prom: PromServer) -> AsyncIterator[tuple[FailQuery, str]]:
    fail = FailQuery(prom.url, contention_queries()["cobusy"])
    async with serve(fail.handle) as url:
        yield fail, url


PARAMS = HistoryParams(window=3600.0, step=60.0)


async def test_the_hourly_read_holds_contention_for_the_snapshot_and_dcgm_reads_unknown(
    prom: PromServer, at: float
) -> None:
    async with PromClient(prom.url) as client:
        ours = await read_metrics(client, view([]), at, PARAMS, MetricsSource.GPU_RECLAIM)
        dcgm = await read_metrics(client, view([]), at, PARAMS, MetricsSource.DCGM)
    assert ours.load is not None and ours.load.contention is not None
    assert {k: _minutes_of(v) for k, v in ours.load.contention.pods.items()} == EXPECTED
    assert build_snapshot(view([]), ours).contention is ours.load.contention
    assert dcgm.load is not None and dcgm.load.contention is not None
    assert dcgm.load.contention.pods == {}  # no per-pod share there: unknown, not read
    assert "the DCGM source has no per-pod utilization" in dcgm.load.contention.error
    assert dcgm.load.fresh  # not a failure: kept for the hour like a read
    assert build_snapshot(view([]), dcgm).contention is dcgm.load.contention


async def test_a_failed_query_gives_no_pods_says_why_and_is_asked_again(
    proxy: tuple[FailQuery, str], at: float
) -> None:
    fail, url = proxy
    args = (view([]), at, PARAMS, MetricsSource.GPU_RECLAIM)
    async with PromClient(url) as client:
        first = await read_metrics(client, *args)
        assert first.load is not None and first.load.contention is not None
        failed = first.load.contention
        assert "503" in failed.error and failed.pods == {} and not first.load.fresh
        fail.failing = False
        second = await read_metrics(client, *args, load=first.load)  # the same hour
        third = await read_metrics(client, *args, load=second.load)
    assert second.load is not None and second.load.contention is not None
    assert not second.load.contention.error and len(second.load.contention.pods) == 8
    assert third.load is second.load  # kept for the hour once read
    assert fail.asked == 3 + 1  # the client's three tries on 503, then one that answered


async def test_a_failed_load_read_keeps_the_contention_read_beside_it(
    prom: PromServer, at: float
) -> None:
    fail = FailQuery(prom.url, load_query())
    async with serve(fail.handle) as url, PromClient(url) as client:
        read = await read_metrics(client, view([]), at, PARAMS, MetricsSource.GPU_RECLAIM)
    assert read.load is not None and "503" in read.load.error and not read.load.fresh
    assert read.load.contention is not None and not read.load.contention.error
    assert {k: _minutes_of(v) for k, v in read.load.contention.pods.items()} == EXPECTED
