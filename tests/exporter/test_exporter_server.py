"""HTTP endpoints on a real aiohttp server on loopback: readiness, gzip, and no work per scrape."""

from __future__ import annotations

import gzip
from collections.abc import AsyncIterator

import aiohttp
import pytest
from aiohttp.test_utils import TestServer
from exporter_fakes import ScriptedDevices, gpu

from exporter.cycle import CollectLoop
from exporter.server import accepts_gzip, make_app
from exporter.sources import DeviceSweep


@pytest.fixture
async def served() -> AsyncIterator[tuple[CollectLoop, ScriptedDevices, str]]:
    devices = ScriptedDevices(lambda: DeviceSweep((gpu(0),)))
    loop = CollectLoop(devices, None, hostname="node-1")
    server = TestServer(make_app(loop), host="127.0.0.1")
    await server.start_server()
    try:
        yield loop, devices, f"http://127.0.0.1:{server.port}"
    finally:
        await server.close()


async def test_readyz_is_503_until_the_first_snapshot_then_200(
    served: tuple[CollectLoop, ScriptedDevices, str],
) -> None:
    loop, _, base = served
    async with aiohttp.ClientSession() as http:
        async with http.get(f"{base}/readyz") as r:
            before = r.status
        async with http.get(f"{base}/metrics") as r:
            metrics_before = r.status
        async with http.get(f"{base}/healthz") as r:
            health = r.status
        async with http.get(f"{base}/health") as r:  # dcgm-exporter's path, for its probes
            dcgm_health = r.status
        loop.collect_once()
        async with http.get(f"{base}/readyz") as r:
            after = r.status
    assert (before, metrics_before, health, dcgm_health, after) == (503, 503, 200, 200, 200)


async def test_metrics_serves_the_last_rendering_plain_or_gzipped_without_reading_devices(
    served: tuple[CollectLoop, ScriptedDevices, str],
) -> None:
    loop, devices, base = served
    published = loop.collect_once()
    async with aiohttp.ClientSession(auto_decompress=False) as http:
        async with http.get(f"{base}/metrics", headers={"Accept-Encoding": "gzip"}) as r:
            zipped, zip_encoding = await r.read(), r.headers.get("Content-Encoding")
            content_type = r.headers["Content-Type"]
        async with http.get(f"{base}/metrics", headers={"Accept-Encoding": "identity"}) as r:
            plain, plain_encoding = await r.read(), r.headers.get("Content-Encoding")
    assert zip_encoding == "gzip" and plain_encoding is None
    assert gzip.decompress(zipped) == plain == published.exposition.body
    assert b'DCGM_FI_DEV_GPU_UTIL{gpu="0"' in plain
    assert content_type == "text/plain; version=0.0.4; charset=utf-8"
    assert devices.reads == 1  # scrapes read nothing


@pytest.mark.parametrize(
    ("header", "expected"),
    [
        pytest.param("", False, id="absent"),
        pytest.param("gzip", True, id="gzip"),
        pytest.param("deflate, gzip;q=0.5", True, id="with-q"),
        pytest.param("gzip;q=0", False, id="refused"),
        pytest.param("br, *", True, id="wildcard"),
        pytest.param("GZIP", True, id="case"),
        pytest.param("identity", False, id="identity"),
    ],
)
def test_accepts_gzip(header: str, expected: bool) -> None:
    assert accepts_gzip(header) is expected
