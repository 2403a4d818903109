"""The pods' memory peaks (the raise gate's budget) read from a REAL Prometheus, hourly.

Each pod's most device memory over the last 7 days, over its GPUs: a peak 8 days ago is out of
the window, one 6 days ago is in, one half a minute ago too. A proxy in front of Prometheus can
fail the peaks query alone: the read then says why (raises refused) and the next read asks again.
"""

from __future__ import annotations

import time
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from aiohttp import web
from clusterviews import view
from loopback import forward, serve
from promserver import PromServer, openmetrics, start_prometheus

import gpu_contract as gc
from reclaimer.prometheus.client import PromClient
from reclaimer.prometheus.history import HistoryParams, MetricsSource
from reclaimer.prometheus.reads import read_metrics
from reclaimer.prometheus.sharing import peaks_query

pytestmark = [pytest.mark.prometheus, pytest.mark.slow]

DAY, GIB = 86400.0, 1024.0**3


def _pod(ns: str, name: str, gpu: str) -> dict[str, str]:
    return {"namespace": ns, "pod": name, "container": "c", "UUID": f"GPU-{gpu}", "Hostname": "n1"}


def _at(now: float, days_ago: float, gib: float) -> list[tuple[float, float]]:
    start = now - days_ago * DAY
    return [(start + 60.0 * k, gib * GIB) for k in range(5)]


def _history(now: float) -> str:
    return openmetrics(
        [
            # peaked at 12 GiB 8 days ago (out of the window), 1 GiB 5 days ago
            (gc.POD_MEMORY, _pod("a", "old", "0"), [*_at(now, 8, 12.0), *_at(now, 5, 1.0)]),
            (gc.POD_MEMORY, _pod("a", "grew", "0"), [*_at(now, 6, 10.0), *_at(now, 0.01, 2.0)]),
            # one pod on two GPUs: its peak is the most on either
            (gc.POD_MEMORY, _pod("b", "two", "1"), _at(now, 1, 3.0)),
            (gc.POD_MEMORY, _pod("b", "two", "2"), _at(now, 1, 5.0)),
            # started half a minute ago: read at the cycle's time, not at the hour's turn
            (gc.POD_MEMORY, _pod("c", "new", "3"), [(now - 30.0, 4.0 * GIB)]),
        ]
    )


@pytest.fixture(scope="module")
def now() -> float:
    return time.time()


@pytest.fixture(scope="module")
def prom(tmp_path_factory: pytest.TempPathFactory, now: float):
    work: Path = tmp_path_factory.mktemp("prom-peaks")
    with start_prometheus(work, history=_history(now)) as server:
        yield server


class FailPeaks:
    """A loopback proxy that answers the peaks query 503 while `failing`, else passes on."""

    def __init__(self, target: str) -> None:
        self.target, self.failing, self.peaks_asked = target, True, 0

    async def handle(self, request: web.Request) -> web.Response:
        form = {k: str(v) for k, v in (await request.post()).items()}
        if form.get("query") == peaks_query():
            self.peaks_asked += 1
            if self.failing:
                return web.Response(status=503, text="unavailable")
        return await forward(self.target, request, form)


@pytest.fixture
async def proxy(prom: PromServer) -> AsyncIterator[tuple[FailPeaks, str]]:
    fail = FailPeaks(prom.url)
    async with serve(fail.handle) as url:
        yield fail, url


PARAMS = HistoryParams(window=3600.0, step=60.0)


async def test_each_pods_peak_over_the_week_over_its_gpus(prom: PromServer, now: float) -> None:
    async with PromClient(prom.url) as client:
        read = await read_metrics(client, view([]), now, PARAMS, MetricsSource.GPU_RECLAIM)
    assert read.load is not None and read.load.peaks is not None
    peaks = read.load.peaks
    assert not peaks.error and peaks.window == 7 * DAY
    assert {k: v / GIB for k, v in peaks.pods.items()} == {
        "a/old": 1.0,
        "a/grew": 10.0,
        "b/two": 5.0,
        "c/new": 4.0,
    }


async def test_dcgm_source_reads_no_peaks(prom: PromServer, now: float) -> None:
    async with PromClient(prom.url) as client:
        read = await read_metrics(client, view([]), now, PARAMS, MetricsSource.DCGM)
    assert read.load is not None and read.load.peaks is None


async def test_a_failed_peaks_read_says_why_and_is_asked_again(
    proxy: tuple[FailPeaks, str], now: float
) -> None:
    fail, url = proxy
    async with PromClient(url) as client:
        first = await read_metrics(client, view([]), now, PARAMS, MetricsSource.GPU_RECLAIM)
        assert first.load is not None and first.load.peaks is not None
        assert "503" in first.load.peaks.error and not first.load.fresh
        fail.failing = False
        args = (client, view([]), now, PARAMS, MetricsSource.GPU_RECLAIM)  # the same hour
        second = await read_metrics(*args, load=first.load)
        third = await read_metrics(*args, load=second.load)
    assert second.load is not None and second.load.peaks is not None
    assert not second.load.peaks.error and len(second.load.peaks.pods) == 4
    assert third.load is second.load  # kept for the hour once read
    assert fail.peaks_asked == 3 + 1  # the client's three tries on 503, then one that answered
