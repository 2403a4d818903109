"""2,000 half-sent requests against a guarded server in its own process (issue 11's finding: 12,000
were held forever, RSS 41 -> 111 MiB, real scrapes timed out). Measured, not guessed: the server's
VmRSS from /proc, the time each connection is closed, the answers to real scrapes meanwhile."""

from __future__ import annotations

import http.client
import json
import re
import resource
import selectors
import socket
import ssl
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from webfixtures import make_pki, web_config_text, write_atomically

from webconfig.model import Limits

HERE = Path(__file__).parent
HALF = b"GET /metrics HTTP/1.1\r\nHost: node\r\nUser-Agent: half\r\n"
HELD = 2000
HEADER_TIMEOUT = 3.0
# Measured growth with 2,000 held plain connections: ~5.6 MiB (~2.9 KiB each; the test prints
# it). The bound leaves ~3x margin and is under a quarter of the 70 MiB.
RSS_GROWTH_BOUND_KIB = 16 * 1024
# With TLS, asyncio's SSL protocol allocates a 256 KiB read buffer per connection (Python 3.11's
# sslproto), ~300 KiB in all: the cap, not the count of clients, bounds that (measured: +37 MiB
# at the default 128). Bound: 512 KiB a slot.
TLS_SLOT_BOUND_KIB = 512
CLOSE_DEADLINE_S = 60.0  # how long to wait for the closes: a deadline, not a measured bound
ANSWER_DEADLINE_S = 60.0  # how long a scrape may take before the test gives up on it
NEVER = 3600.0  # a header timeout no test run lasts long enough to see fire


def rss_kib(pid: int) -> int:
    status = Path(f"/proc/{pid}/status").read_text()
    match = re.search(r"^VmRSS:\s+(\d+) kB$", status, re.MULTILINE)
    assert match is not None
    return int(match.group(1))


def get(port: int, path: str) -> tuple[int, bytes, float]:
    started = time.monotonic()
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=ANSWER_DEADLINE_S)
    try:
        connection.request("GET", path)
        response = connection.getresponse()
        return response.status, response.read(), time.monotonic() - started
    finally:
        connection.close()


@contextmanager
def server_process(
    header_timeout: float, max_connections: int, config: Path | None = None
) -> Iterator[tuple[int, int]]:
    """(port, pid) of held_server.py, with this process's file limit raised for the clients."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if hard < HELD + 200:
        pytest.skip(f"needs {HELD + 200} file descriptors, the hard limit is {hard}")
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    command = [sys.executable, str(HERE / "held_server.py"), str(header_timeout)]
    command += [str(max_connections), *([str(config)] if config else [])]
    process = subprocess.Popen(command, stdout=subprocess.PIPE, text=True)
    try:
        assert process.stdout is not None
        ready = json.loads(process.stdout.readline())
        yield ready["port"], ready["pid"]
    finally:
        process.kill()
        process.wait()
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))


@pytest.fixture
def server() -> Iterator[tuple[int, int]]:
    with server_process(HEADER_TIMEOUT, HELD * 2) as found:  # a cap above HELD: all are held
        yield found


def wait_for_closes(sockets: list[socket.socket], deadline: float) -> dict[int, float]:
    """fileno -> when the server closed it (read EOF or reset)."""
    closed: dict[int, float] = {}
    with selectors.DefaultSelector() as selector:
        for sock in sockets:
            selector.register(sock, selectors.EVENT_READ)
        while len(closed) < len(sockets) and time.monotonic() < deadline:
            for key, _ in selector.select(timeout=0.2):
                sock = key.fileobj
                assert isinstance(sock, socket.socket)
                try:
                    data = sock.recv(1024)
                except ConnectionError:
                    data = b""
                assert data == b"", "a half-sent request must get no answer, only a close"
                closed[sock.fileno()] = time.monotonic()
                selector.unregister(sock)
    return closed


@pytest.mark.slow
def test_2000_half_sent_requests_are_closed_memory_stays_flat_and_scrapes_answered(
    server: tuple[int, int],
) -> None:
    port, pid = server
    for _ in range(50):  # warm up: imports, buffers and caches a real scrape uses
        assert get(port, "/metrics")[0] == 200
    baseline = rss_kib(pid)

    sockets: list[socket.socket] = []
    opened: dict[int, float] = {}
    try:
        for _ in range(HELD):
            before = time.monotonic()  # before the connection: the server's clock starts later
            sock = socket.create_connection(("127.0.0.1", port))
            sock.sendall(HALF)
            sockets.append(sock)
            opened[sock.fileno()] = before
        status, body, _ = get(port, "/stats")
        held = json.loads(body)
        # Every connection is held, or (on a machine slow to open them all) already closed by
        # the header timeout: none was refused or evicted.
        assert status == 200 and held["pending"] + held["header_timeouts"] >= HELD - 5, held
        assert held["evicted"] == held["refused_at_cap"] == 0, held
        held_rss = rss_kib(pid)

        scrapes = [get(port, "/metrics") for _ in range(20)]  # answered while all are held
        assert all(status == 200 and len(body) > 1000 for status, body, _ in scrapes)
        slowest_scrape = max(seconds for _, _, seconds in scrapes)

        closed = wait_for_closes(sockets, time.monotonic() + HEADER_TIMEOUT + CLOSE_DEADLINE_S)
        assert len(closed) == HELD
        lifetimes = [closed[fd] - opened[fd] for fd in closed]
        after = json.loads(get(port, "/stats")[1])
    finally:
        for sock in sockets:
            sock.close()

    growth = held_rss - baseline
    print(
        f"\n{held['pending']} held: RSS {baseline} -> {held_rss} KiB (+{growth} KiB, "
        f"{growth / HELD:.2f} KiB each); scrapes meanwhile: slowest "
        f"{slowest_scrape * 1000:.0f} ms; "
        f"closed after {min(lifetimes):.2f}-{max(lifetimes):.2f} s "
        f"(header timeout {HEADER_TIMEOUT} s); RSS after: {rss_kib(pid)} KiB"
    )
    assert growth < RSS_GROWTH_BOUND_KIB
    assert min(lifetimes) >= HEADER_TIMEOUT - 0.01  # not before the timeout (load only delays)
    assert after["header_timeouts"] >= HELD and after["pending"] == 0  # closed by it
    # How promptly after the timeout, and how fast the scrapes meanwhile, are measured by
    # bench/webconfig_held_bench.py: wall-clock bounds flake on the shared 2-core machine.


@pytest.mark.slow
def test_a_tls_flood_is_bounded_by_the_cap_and_scrapes_evict_their_way_in(
    tmp_path: Path,
) -> None:
    pki = make_pki(tmp_path)
    config = tmp_path / "web-config.yml"
    write_atomically(config, web_config_text(pki))
    cap = Limits().max_connections
    context = pki.client_context()

    def tls_connect(port: int) -> ssl.SSLSocket:
        raw = socket.create_connection(("127.0.0.1", port))
        return context.wrap_socket(raw, server_hostname="localhost")

    def scrape(port: int) -> bytes:
        with tls_connect(port) as sock:
            sock.sendall(b"GET /metrics HTTP/1.1\r\nHost: node\r\n\r\n")
            answer = b""
            while chunk := sock.recv(65536):
                answer += chunk
            return answer

    with server_process(NEVER, cap, config) as (port, pid):  # every close is an eviction
        for _ in range(20):
            assert scrape(port).startswith(b"HTTP/1.1 200 OK")
        baseline = rss_kib(pid)
        flood: list[ssl.SSLSocket] = []
        try:
            for _ in range(cap * 5):
                sock = tls_connect(port)
                sock.sendall(HALF)
                flood.append(sock)
            held_rss = rss_kib(pid)
            answers = [scrape(port) for _ in range(5)]
            with tls_connect(port) as sock:  # counts over TLS, through the same guard
                sock.sendall(b"GET /stats HTTP/1.1\r\nHost: node\r\n\r\n")
                counts = json.loads(sock.recv(65536).partition(b"\r\n\r\n")[2])
        finally:
            for sock in flood:
                sock.close()
    growth = held_rss - baseline
    print(f"\nTLS flood of {cap * 5} at cap {cap}: +{growth} KiB ({growth / cap:.0f} KiB a slot)")
    assert all(answer.startswith(b"HTTP/1.1 200 OK") for answer in answers)
    assert counts["evicted"] >= cap * 4 and counts["pending"] <= cap
    assert growth < cap * TLS_SLOT_BOUND_KIB
