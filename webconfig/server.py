"""Start an aiohttp app behind the guard, with or without a web config, and stop it.

`serve(app, host, port, config=..., open_paths=..., limits=...)` sets the app up with aiohttp's
`AppRunner` (startup and cleanup hooks run as usual) but listens with its own `loop.create_server`
whose protocol is `guard.GuardedConnection`; aiohttp's `web.Server` (the runner's public protocol
factory) only ever receives connections whose request head is complete. Every response carries
`Connection: close`: one request per connection keeps each request under the guard's timeouts
(scrapers reconnect each time; with TLS that is one handshake per scrape, a millisecond of CPU).

aiohttp's own head limits are set above the guard's, so the guard, which answers without echoing,
always refuses first.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Collection

from aiohttp import hdrs, web

from webconfig.access import install_access_rules
from webconfig.auth import BasicAuth
from webconfig.guard import GuardedConnection, Shared
from webconfig.live import LiveWebConfig
from webconfig.model import Limits
from webconfig.slots import ConnectionCounts, Slots

LOG = logging.getLogger("webconfig")
SHUTDOWN_GRACE = 5.0  # seconds in-flight requests get at stop
# The kernel's queue of connections not yet accepted; the guard, not the kernel, is the cap, and
# asyncio accepts up to this many per loop iteration, so bursts are admitted (or evicted) quickly.
BACKLOG = 1024


class WebServer:
    """A listening server; `stop()` it. `port` is the bound port (useful with port 0)."""

    def __init__(
        self, server: asyncio.Server, runner: web.AppRunner, slots: Slots, tls: bool
    ) -> None:
        self._server = server
        self._runner = runner
        self._slots = slots
        self.tls = tls
        # host None binds every interface: one socket per address family.
        self.addresses: list[tuple[str, int]] = [sock.getsockname()[:2] for sock in server.sockets]
        self.port = self.addresses[0][1]

    def counts(self) -> ConnectionCounts:
        return self._slots.snapshot()

    async def stop(self) -> None:
        self._server.close()  # stop accepting
        for connection in self._slots.pending():
            connection.evict()  # nothing in flight: no reason to wait for them
        await self._runner.cleanup()  # in-flight requests finish (SHUTDOWN_GRACE), hooks run
        for connection in self._slots.pending() + self._slots.active():
            connection.evict()
        await self._server.wait_closed()


async def serve(
    app: web.Application,
    host: str | None,
    port: int,
    *,
    config: LiveWebConfig | None = None,
    open_paths: Collection[str] = (),
    limits: Limits | None = None,
) -> WebServer:
    """Serve `app` on host:port (host None: every interface) behind the guard, with TLS and basic
    auth as `config` says (None: plain HTTP, no auth). Raises OSError if the address cannot be
    bound. `app` must not be frozen: the auth middleware and response hooks are added to it."""
    limits = limits or Limits()
    if config is not None:
        install_access_rules(app, config, open_paths, BasicAuth())
    app.on_response_prepare.append(_one_request_per_connection)
    head_limit = limits.max_header_bytes + 1  # aiohttp's limits sit above the guard's
    runner = web.AppRunner(
        app,
        handle_signals=False,
        access_log=None,
        shutdown_timeout=SHUTDOWN_GRACE,
        max_line_size=head_limit,
        max_field_size=head_limit,
        max_headers=limits.max_header_lines + 1,
        # A connection the guard aborts (request_timeout, stop) has nobody left to answer: cancel
        # its handler rather than let it run on (aiohttp's default lets it finish).
        handler_cancellation=True,
    )
    await runner.setup()
    handler_factory = runner.server
    assert handler_factory is not None  # set by setup()
    slots = Slots(limits.max_connections)

    shared = Shared(
        limits,
        slots,
        handler_factory,
        (lambda: config.current().ssl_context) if config is not None else (lambda: None),
    )
    loop = asyncio.get_running_loop()
    try:
        server = await loop.create_server(
            lambda: GuardedConnection(shared), host, port, reuse_address=True, backlog=BACKLOG
        )
    except OSError:
        await runner.cleanup()
        raise
    web_server = WebServer(server, runner, slots, tls=config is not None and config.tls)
    scheme = "https" if web_server.tls else "http"
    urls = [
        f"{scheme}://[{h}]:{p}" if ":" in h else f"{scheme}://{h}:{p}"
        for h, p in web_server.addresses
    ]
    LOG.info("listening on %s", ", ".join(urls))
    return web_server


async def _one_request_per_connection(_request: web.Request, response: web.StreamResponse) -> None:
    response.force_close()  # aiohttp closes the connection after this response...
    # ...but has already chosen the Connection header when this hook runs (aiohttp 3.14), so say
    # it ourselves: a client must not count on reusing the connection.
    response.headers[hdrs.CONNECTION] = "close"
