"""Pins on aiohttp behaviour the guard relies on (aiohttp 3.14): whatever the head scanner accepts,
aiohttp parses without an error of its own (its errors echo the request and log tracebacks), and
aiohttp's list of singleton headers is the scanner's."""

from __future__ import annotations

import asyncio
import logging
import socket
import threading
from collections.abc import Iterator

import pytest
from aiohttp import http_parser
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_webconfig_head import CASES
from webfixtures import make_app

from webconfig.head import SINGLETON_HEADERS, HeadScanner, Verdict
from webconfig.server import WebServer, serve


def test_the_singleton_headers_are_aiohttps() -> None:
    assert {name.encode() for name in http_parser.SINGLETON_HEADERS} == SINGLETON_HEADERS


GIVE_UP_S = 60.0  # only a hung server takes this long to answer, even on a busy machine


@pytest.fixture(scope="module")
def threaded_server() -> Iterator[int]:
    """A guarded server on its own loop in a thread, for blocking clients (and hypothesis)."""
    loop = asyncio.new_event_loop()
    started: list[WebServer] = []
    ready = threading.Event()

    async def main() -> None:
        started.append(await serve(make_app(), "127.0.0.1", 0))
        ready.set()

    thread = threading.Thread(target=loop.run_forever, daemon=True)
    thread.start()
    asyncio.run_coroutine_threadsafe(main(), loop)
    assert ready.wait(GIVE_UP_S)
    yield started[0].port
    asyncio.run_coroutine_threadsafe(started[0].stop(), loop).result(10)
    loop.call_soon_threadsafe(loop.stop)
    thread.join(10)


def exchange(port: int, data: bytes) -> bytes:
    with socket.create_connection(("127.0.0.1", port), timeout=GIVE_UP_S) as sock:
        sock.sendall(data)
        answer = b""
        while chunk := sock.recv(65536):
            answer += chunk
        return answer


def assert_aiohttp_served(answer: bytes, records: list[logging.LogRecord]) -> None:
    status = answer.split(b" ", 2)[1] if answer.startswith(b"HTTP/1.") else b"none"
    assert status in (b"200", b"404", b"405"), answer[:200]
    assert not [r for r in records if r.levelno >= logging.WARNING or r.exc_info]


COMPLETE = [(name, data) for name, data, verdict in CASES if verdict is Verdict.COMPLETE]


@pytest.mark.parametrize("data", [c[1] for c in COMPLETE], ids=[c[0] for c in COMPLETE])
def test_every_accepted_case_is_served_by_aiohttp(
    threaded_server: int, data: bytes, caplog: pytest.LogCaptureFixture
) -> None:
    assert_aiohttp_served(exchange(threaded_server, data), caplog.records)


_TCHAR = "!#$%&'*+-.^_`|~0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
_TARGET = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~:/?#[]@!$&'()*+,;=%"
_VALUE = st.binary(max_size=40).map(
    lambda raw: bytes(b for b in raw if b == 9 or 32 <= b <= 126 or b >= 128)
)


@st.composite
def heads(draw: st.DrawFn) -> bytes:
    method = draw(st.sampled_from([b"GET", b"HEAD"]))
    target = b"/" + draw(st.text(_TARGET, max_size=60)).encode()
    names = draw(st.lists(st.text(_TCHAR, min_size=1, max_size=20), max_size=8))
    fields = [
        name.encode() + b":" + draw(st.sampled_from([b"", b" ", b"\t"])) + draw(_VALUE)
        for name in names
        if name.lower() not in ("host", "content-length", "transfer-encoding", "upgrade")
    ]
    return b"\r\n".join([method + b" " + target + b" HTTP/1.1", b"Host: h", *fields, b"", b""])


@settings(
    max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(head=heads())
def test_generated_heads_the_scanner_accepts_are_served_by_aiohttp(
    threaded_server: int, head: bytes
) -> None:
    scanner = HeadScanner(16384, 100)
    if scanner.feed(head) is not Verdict.COMPLETE:
        return  # refused by the guard: aiohttp never sees it
    with_logs: list[logging.LogRecord] = []
    handler = logging.Handler()
    handler.emit = with_logs.append  # type: ignore[method-assign]
    logging.getLogger("aiohttp").addHandler(handler)
    try:
        answer = exchange(threaded_server, head)
    finally:
        logging.getLogger("aiohttp").removeHandler(handler)
    assert_aiohttp_served(answer, with_logs)
