"""The guard in front of aiohttp: head and request timeouts, the connection cap, refused heads.

No test here depends on how fast the machine is: a close is awaited with a deadline that only a
hung server reaches, and the server's own counts say why it closed a connection. A timeout that
a test does not exercise is `NEVER`, so a slow run cannot trip it; one that it does is short,
and what must happen before it does (a TLS handshake) is retried with a longer one when it did
not fit.
"""

from __future__ import annotations

import asyncio
import logging
import time
from pathlib import Path

import pytest
from webfixtures import RELEASE, Pki, make_app, running, web_config_text, write_atomically

from webconfig.live import LiveWebConfig
from webconfig.model import Limits
from webconfig.server import serve

SCRAPE = b"GET /metrics HTTP/1.1\r\nHost: node\r\n\r\n"
HALF = b"GET /metrics HTTP/1.1\r\nHost: node\r\n"
NEVER = 3600.0  # a timeout no test run lasts long enough to see fire
QUICK = Limits(header_timeout=0.3, request_timeout=NEVER)
# How long a test waits for a close it expects: a deadline, not a measured bound (the shared
# 2-core machine may run the server late by seconds). How promptly the guard closes is measured
# in bench/webconfig_held_bench.py.
CLOSE_DEADLINE_S = 30.0


async def exchange(
    port: int, data: bytes, timeout: float = CLOSE_DEADLINE_S, **tls: object
) -> bytes:
    """Send `data`, then read until the server closes."""
    reader, writer = await asyncio.open_connection("127.0.0.1", port, **tls)  # type: ignore[arg-type]
    writer.write(data)
    try:
        return await asyncio.wait_for(reader.read(), timeout)
    finally:
        writer.close()


async def held(port: int, data: bytes) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    writer.write(data)
    await writer.drain()
    return reader, writer


async def closed_within(reader: asyncio.StreamReader, seconds: float) -> bool:
    try:
        return await asyncio.wait_for(reader.read(), seconds) == b""
    except TimeoutError:
        return False
    except ConnectionError:
        return True


async def until(condition: object, seconds: float = CLOSE_DEADLINE_S) -> None:
    deadline = time.monotonic() + seconds
    while not condition():  # type: ignore[operator]
        assert time.monotonic() < deadline, "condition not met in time"
        await asyncio.sleep(0.01)


async def test_a_half_sent_request_is_closed_after_the_header_timeout() -> None:
    async with running(limits=QUICK) as server:
        started = time.monotonic()  # before the connection: the server's clock starts later
        reader, _ = await held(server.port, HALF)
        assert await closed_within(reader, CLOSE_DEADLINE_S)
        assert time.monotonic() - started >= QUICK.header_timeout - 0.01  # not before it
        await until(lambda: server.counts().pending == 0, CLOSE_DEADLINE_S)
        assert server.counts().header_timeouts == 1  # closed by the header timeout, not else


async def test_a_silent_tls_client_is_closed_after_the_same_timeout(
    pki: Pki, tmp_path: Path
) -> None:
    path = tmp_path / "web.yml"
    write_atomically(path, web_config_text(pki))
    async with running(LiveWebConfig(path), limits=QUICK) as server:
        no_hello, _ = await held(server.port, b"")
        assert await closed_within(no_hello, CLOSE_DEADLINE_S)
        await until(lambda: server.counts().pending == 0)
        assert server.counts().header_timeouts == 1
    # The handshake counts against the header budget: on a busy machine it may not fit in a
    # short one, and then it is cut by that very timeout. Until it fits, a longer one.
    header_timeout = QUICK.header_timeout
    while not await _tls_half_request_closed(pki, path, header_timeout):
        header_timeout *= 2
        assert header_timeout < CLOSE_DEADLINE_S, "no TLS handshake completed in time"


async def _tls_half_request_closed(pki: Pki, path: Path, header_timeout: float) -> bool:
    """True when a TLS client that completed its handshake and sent half a request was closed
    by the header timeout; False when the handshake itself was cut by it."""
    limits = Limits(header_timeout=header_timeout, request_timeout=NEVER)
    async with running(LiveWebConfig(path), limits=limits) as server:
        try:
            tls_reader, tls_writer = await asyncio.open_connection(
                "127.0.0.1", server.port, ssl=pki.client_context()
            )
        except OSError:  # ssl.SSLError and ConnectionError among them
            await until(lambda: server.counts().pending == 0)
            assert server.counts().header_timeouts == 1  # cut by the timeout, nothing else
            return False
        tls_writer.write(HALF)  # a completed handshake, then half a request
        assert await closed_within(tls_reader, CLOSE_DEADLINE_S)
        await until(lambda: server.counts().pending == 0)
        assert server.counts().header_timeouts == 1
        return True


async def test_a_slow_request_is_cut_at_the_request_timeout() -> None:
    async with running(limits=Limits(header_timeout=NEVER, request_timeout=0.3)) as server:
        reader, _ = await held(server.port, b"GET /slow HTTP/1.1\r\nHost: h\r\n\r\n")
        await until(lambda: server.counts().active == 1)
        assert await closed_within(reader, CLOSE_DEADLINE_S)
        await until(lambda: server.counts().active == 0)
        assert server.counts().request_timeouts == 1


async def test_at_the_cap_a_scrape_evicts_the_oldest_half_sent_request() -> None:
    async with running(limits=Limits(max_connections=4, header_timeout=NEVER)) as server:
        holders = [await held(server.port, HALF) for _ in range(4)]
        await until(lambda: server.counts().pending == 4)
        answer = await exchange(server.port, SCRAPE)
        assert answer.startswith(b"HTTP/1.1 200 OK")
        assert await closed_within(holders[0][0], CLOSE_DEADLINE_S)  # the oldest gave its slot
        await until(lambda: server.counts().pending == 3)  # the three others still held
        assert server.counts().evicted == 1
        for reader, _ in holders[1:]:
            assert not reader.at_eof()


async def test_at_the_cap_with_every_slot_serving_a_new_connection_is_closed() -> None:
    app = make_app()
    limits = Limits(max_connections=3, header_timeout=NEVER, request_timeout=NEVER)
    async with running(limits=limits, app=app) as server:
        slow = [await held(server.port, b"GET /slow HTTP/1.1\r\nHost: h\r\n\r\n") for _ in range(3)]
        await until(lambda: server.counts().active == 3)
        assert await exchange(server.port, SCRAPE) == b""
        counts = server.counts()  # closed at once, for the cap: no timeout could have fired
        assert (counts.refused_at_cap, counts.header_timeouts, counts.request_timeouts) == (1, 0, 0)
        app[RELEASE].set()
        for reader, _ in slow:
            answer = await asyncio.wait_for(reader.read(), CLOSE_DEADLINE_S)
            assert answer.startswith(b"HTTP/1.1 200 OK")
        await until(lambda: server.counts().active == 0)
        assert (await exchange(server.port, SCRAPE)).startswith(b"HTTP/1.1 200 OK")


async def test_a_10kb_method_gets_a_short_400_without_echo_or_traceback(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.DEBUG)
    method = b"X" * 10_000
    async with running() as server:
        answer = await exchange(server.port, method + b" / HTTP/1.1\r\nHost: h\r\n\r\n")
    head, _, body = answer.partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 400 Bad Request")
    assert body == b"bad request\n"
    assert b"XXXX" not in answer and len(answer) < 200
    records = [r for r in caplog.records if r.name.startswith(("webconfig", "aiohttp"))]
    refusals = [r for r in records if "refused" in r.getMessage()]
    assert len(refusals) == 1 and refusals[0].levelno == logging.DEBUG
    assert all(r.exc_info is None and "XXXX" not in r.getMessage() for r in records)
    assert not [r for r in records if r.levelno >= logging.WARNING]


@pytest.mark.parametrize(
    ("data", "status"),
    [
        (b"GET / HTTP/1.1\r\nHost: h\r\nCookie: " + b"c" * 20_000 + b"\r\n\r\n", b"431"),
        (b"\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03" + b"\x00" * 100, b"400"),
        (b"GET / HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n", b"400"),
        (b"BREW /pot HTTP/1.1\r\nHost: h\r\n\r\n", b"501"),
        (b"POST /metrics HTTP/1.1\r\nHost: h\r\nContent-Length: 2\r\n\r\nhi", b"501"),
        (b"GET / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n", b"400"),
        (b"GET / HTTP/1.1\r\nHost: h\r\nContent-Encoding: br\r\n\r\n", b"400"),
    ],
    ids=[
        "huge-cookie",
        "tls-on-plain-port",
        "two-hosts",
        "unknown-method",
        "post",
        "bad-chunked-body",
        "undecodable-encoding",
    ],
)
async def test_refused_heads_get_a_fixed_answer(
    data: bytes, status: bytes, caplog: pytest.LogCaptureFixture
) -> None:
    async with running() as server:
        answer = await exchange(server.port, data)
        await until(lambda: server.counts().pending == 0)
    assert answer.split(b" ")[1] == status
    assert b"Connection: close" in answer and len(answer) < 200
    assert not [r for r in caplog.records if r.levelno >= logging.WARNING]


async def test_a_client_that_hangs_up_mid_head_frees_its_slot() -> None:
    async with running(limits=Limits(max_connections=2, header_timeout=NEVER)) as server:
        _, writer = await held(server.port, HALF)
        await until(lambda: server.counts().pending == 1)
        writer.close()
        await until(lambda: server.counts().pending == 0)
        assert server.counts().header_timeouts == 0


async def test_stop_closes_held_connections() -> None:
    async with running(limits=Limits(header_timeout=NEVER)) as server:
        reader, _ = await held(server.port, HALF)
        await until(lambda: server.counts().pending == 1)
    assert await closed_within(reader, CLOSE_DEADLINE_S)


async def test_pipelined_garbage_after_a_scrape_never_reaches_aiohttp(
    caplog: pytest.LogCaptureFixture,
) -> None:
    async with running() as server:
        answer = await exchange(
            server.port, SCRAPE + b"GET /x HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n"
        )
    assert answer.startswith(b"HTTP/1.1 200 OK") and answer.count(b"HTTP/1.1") == 1
    assert not [r for r in caplog.records if r.levelno >= logging.WARNING]


async def test_an_address_in_use_raises_oserror() -> None:
    async with running() as first:
        with pytest.raises(OSError):
            await serve(make_app(), "127.0.0.1", first.port)


def test_limits_refuse_nonsense_all_at_once() -> None:
    with pytest.raises(ValueError) as caught:
        Limits(header_timeout=0, max_connections=0, max_header_bytes=10)
    message = str(caught.value)
    assert "header_timeout" in message and "max_connections" in message
    assert "max_header_bytes" in message
