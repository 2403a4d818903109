"""A flood of wrong passwords does not lock out the right one.

A real guarded server with a cost-8 user, 20 connections sending new
wrong passwords as fast as they are answered, and then a scraper whose password is not cached yet
(a new Prometheus replica, a rotated password, any scraper after a restart). The scraper gets
200, if slowly: from the flood's own address (first come, first served within one address) and
from another one (addresses take turns). Before `webconfig.admission`, the scraper got 503 for as
long as the flood lasted."""

from __future__ import annotations

import asyncio
import base64
import contextlib
import time
from collections import Counter
from pathlib import Path

import bcrypt
import pytest
from webfixtures import running, write_atomically

from webconfig.live import LiveWebConfig
from webconfig.model import Limits

FLOOD = 20
PASSWORD = "right-password"


async def get(port: int, user: str, password: str, local: str = "127.0.0.1") -> int:
    """One GET /metrics on a fresh connection from `local`; the answer's status code."""
    reader, writer = await asyncio.open_connection("127.0.0.1", port, local_addr=(local, 0))
    token = base64.b64encode(f"{user}:{password}".encode()).decode()
    writer.write(
        f"GET /metrics HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Basic {token}\r\n\r\n".encode()
    )
    try:
        status_line = await reader.readline()
    finally:
        writer.close()
        with contextlib.suppress(OSError):
            await writer.wait_closed()
    return int(status_line.split()[1]) if status_line else 0


async def flood(port: int, n: int, seen: Counter[int], stop: asyncio.Event) -> None:
    guesses = 0
    while not stop.is_set():
        guesses += 1
        try:
            seen[await get(port, "prometheus", f"guess-{n}-{guesses}")] += 1
        except OSError:
            seen[0] += 1


async def wait_for(condition: object, timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while not (callable(condition) and condition()):
        assert time.monotonic() < deadline, "the flood never got going"
        await asyncio.sleep(0.05)


@pytest.mark.slow
@pytest.mark.parametrize("scraper_address", ["127.0.0.1", "127.0.0.2"], ids=["same", "other"])
async def test_a_right_password_gets_in_during_a_flood_of_wrong_ones(
    tmp_path: Path, scraper_address: str
) -> None:
    hashed = bcrypt.hashpw(PASSWORD.encode(), bcrypt.gensalt(8)).decode()
    path = tmp_path / "web-config.yml"
    write_atomically(path, f"basic_auth_users:\n  prometheus: '{hashed}'\n")
    seen: Counter[int] = Counter()
    stop = asyncio.Event()
    # the scraper may wait its turn for long on a busy machine: no request timeout cuts it
    async with running(LiveWebConfig(path), limits=Limits(request_timeout=3600.0)) as server:
        tasks = [asyncio.create_task(flood(server.port, n, seen, stop)) for n in range(FLOOD)]
        try:
            await wait_for(lambda: seen[401] >= FLOOD)  # every flood connection has been denied
            status = await asyncio.wait_for(
                get(server.port, "prometheus", PASSWORD, scraper_address), timeout=60
            )
        finally:
            stop.set()
            await asyncio.gather(*tasks)
    assert status == 200
    assert seen[401] >= FLOOD  # the flood was checked (and denied) all along
