"""Helpers for the web config tests: PKI files, config files, a test app, a client, a clock."""

from __future__ import annotations

import asyncio
import contextlib
import functools
import os
import shutil
import socket
import ssl
import subprocess
import tempfile
import time
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, replace
from pathlib import Path

import aiohttp
import bcrypt
import trustme
from aiohttp import web

from webconfig.live import LiveWebConfig
from webconfig.model import Limits
from webconfig.server import WebServer, serve

OPEN_PATHS = ("/healthz", "/health", "/readyz")
RELEASE = web.AppKey("release", asyncio.Event)


@dataclass(frozen=True)
class Pki:
    """A server certificate for localhost/127.0.0.1 from `ca`, and a client certificate from
    `client_ca` (a separate CA, as with a real Prometheus client certificate)."""

    ca: trustme.CA
    client_ca: trustme.CA
    directory: Path
    cert: Path
    key: Path
    client_ca_file: Path
    client_cert: Path  # certificate and key in one PEM

    def copy_to(self, directory: Path) -> Pki:
        copies = {}
        for name in ("cert", "key", "client_ca_file", "client_cert"):
            source: Path = getattr(self, name)
            copies[name] = directory / source.name
            shutil.copy(source, copies[name])
        return replace(self, directory=directory, **copies)

    def client_context(
        self, *, with_cert: bool = False, max_version: ssl.TLSVersion | None = None
    ) -> ssl.SSLContext:
        context = ssl.create_default_context()
        self.ca.configure_trust(context)
        if with_cert:
            context.load_cert_chain(self.client_cert)
        if max_version is not None:
            context.maximum_version = max_version
        return context


def make_pki(directory: Path) -> Pki:
    ca, client_ca = trustme.CA(), trustme.CA()
    server = ca.issue_cert("localhost", "127.0.0.1")
    client = client_ca.issue_cert("prometheus.monitoring.svc")
    paths = {
        "cert": directory / "server.crt",
        "key": directory / "server.key",
        "client_ca_file": directory / "client-ca.crt",
        "client_cert": directory / "client.pem",
    }
    server.cert_chain_pems[0].write_to_path(paths["cert"])
    server.private_key_pem.write_to_path(paths["key"])
    client_ca.cert_pem.write_to_path(paths["client_ca_file"])
    client.private_key_and_cert_chain_pem.write_to_path(paths["client_cert"])
    return Pki(ca=ca, client_ca=client_ca, directory=directory, **paths)


def rotate_server_cert(pki: Pki, ca: trustme.CA) -> bytes:
    """Replace the server certificate and key in place (as a Secret update would); returns the new
    certificate in DER, to compare with what a client is served."""
    fresh = ca.issue_cert("localhost", "127.0.0.1")
    write_atomically(pki.cert, fresh.cert_chain_pems[0].bytes())
    write_atomically(pki.key, fresh.private_key_pem.bytes())
    return ssl.PEM_cert_to_DER_cert(fresh.cert_chain_pems[0].bytes().decode("ascii"))


@functools.cache
def bcrypt_hash(password: str) -> str:
    """A bcrypt hash at the lowest cost, to keep tests fast; written as htpasswd does ($2y$)."""
    hashed = bcrypt.hashpw(password.encode(), bcrypt.gensalt(4)).decode()
    return "$2y$" + hashed[4:]


def write_atomically(path: Path, content: str | bytes) -> None:
    """Write-then-rename, as a Kubernetes Secret volume swaps its files: a new inode each time."""
    data = content.encode() if isinstance(content, str) else content
    temporary = path.with_name(path.name + ".tmp")
    temporary.write_bytes(data)
    os.replace(temporary, path)


def web_config_text(
    pki: Pki | None = None,
    *,
    users: dict[str, str] | None = None,
    client_auth: str | None = None,
    min_version: str | None = None,
    headers: dict[str, str] | None = None,
) -> str:
    """A web config file; certificate paths are relative (to the config file's directory)."""
    lines: list[str] = []
    if pki is not None:
        lines += [
            "tls_server_config:",
            f"  cert_file: {pki.cert.name}",
            f"  key_file: {pki.key.name}",
        ]
        if client_auth is not None:
            lines += [f"  client_auth_type: {client_auth}"]
            lines += [f"  client_ca_file: {pki.client_ca_file.name}"]
        if min_version is not None:
            lines += [f"  min_version: {min_version}"]
    if users:
        lines += ["basic_auth_users:"]
        lines += [f"  {user}: '{bcrypt_hash(password)}'" for user, password in users.items()]
    if headers:
        lines += ["http_server_config:", "  headers:"]
        lines += [f"    {name}: {value}" for name, value in headers.items()]
    return "\n".join(lines) + "\n"


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float = 1.0) -> None:
        self.now += seconds


def make_app() -> web.Application:
    app = web.Application()
    app[RELEASE] = asyncio.Event()

    async def metrics(_request: web.Request) -> web.Response:
        return web.Response(text="up 1\n")

    async def healthz(_request: web.Request) -> web.Response:
        return web.Response(text="ok\n")

    async def slow(request: web.Request) -> web.Response:
        await request.app[RELEASE].wait()
        return web.Response(text="done\n")

    app.router.add_get("/metrics", metrics)
    for path in OPEN_PATHS:
        app.router.add_get(path, healthz)
    app.router.add_get("/slow", slow)
    return app


@asynccontextmanager
async def running(
    config: LiveWebConfig | None = None,
    limits: Limits | None = None,
    app: web.Application | None = None,
) -> AsyncIterator[WebServer]:
    server = await serve(
        app or make_app(), "127.0.0.1", 0, config=config, open_paths=OPEN_PATHS, limits=limits
    )
    try:
        yield server
    finally:
        await server.stop()


@dataclass(frozen=True)
class Answer:
    status: int
    headers: dict[str, str]
    body: str


async def fetch(
    url: str,
    *,
    context: ssl.SSLContext | None = None,
    auth: tuple[str, str] | None = None,
    timeout: float = 60.0,
) -> Answer:
    """One GET on a fresh connection; `timeout` only gives up on a server that hangs."""
    headers = {"Authorization": aiohttp.encode_basic_auth(*auth)} if auth else {}
    async with (
        aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=timeout)) as session,
        session.get(url, ssl=context if context is not None else True, headers=headers) as response,
    ):
        return Answer(response.status, dict(response.headers), await response.text())


@contextlib.contextmanager
def listening_process(argv: list[str], port: int, cwd: Path) -> Iterator[subprocess.Popen[bytes]]:
    """Run a server process until it accepts connections on 127.0.0.1:`port`; stop it after.

    Its output goes to a file, not a pipe: a pipe nobody reads blocks a server that logs more
    than the pipe's buffer."""
    with tempfile.TemporaryFile() as log:
        proc = subprocess.Popen(argv, cwd=cwd, stdout=log, stderr=subprocess.STDOUT)
        try:
            deadline = time.monotonic() + 60
            while True:
                if proc.poll() is not None:
                    log.seek(0)
                    raise AssertionError(f"the server exited early: {log.read().decode()}")
                with socket.socket() as s:
                    if s.connect_ex(("127.0.0.1", port)) == 0:
                        break
                assert time.monotonic() < deadline, "the server never listened"
                time.sleep(0.2)
            yield proc
        finally:
            proc.terminate()
            proc.wait(timeout=30)


# A header timeout above `webconfig.model.Limits`' default (10 s), for a server started with it
# to show it took the flag: closed no earlier than this, a half-sent request was not closed at the
# default. A lower bound, which a busy machine only makes easier to meet.
ABOVE_DEFAULT_HEADER_TIMEOUT_S = 11.0


async def dropped_after(
    host: str, port: int, context: ssl.SSLContext | None = None, timeout: float = 120.0
) -> float:
    """Send half a request head (over TLS with `context`); how long the connection lasted until
    the server closed it without an answer, timed from before it was opened (so never shorter
    than the server's own count, which starts at accept). `timeout` only gives up on a server
    that never closes it."""
    start = time.monotonic()
    reader, writer = await asyncio.open_connection(host, port, ssl=context)
    writer.write(b"GET /metrics HTTP/1.1\r\nHost: x\r\n")
    await writer.drain()
    assert await asyncio.wait_for(reader.read(), timeout=timeout) == b""
    writer.close()
    return time.monotonic() - start
