"""Serve an aiohttp handler on loopback for a test, and forward a request to a real server.

The proxies the Prometheus tests put in front of a real Prometheus (to count, gate or fail what
the client sends) and the scripted fake Prometheus all serve one handler this way.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager

import aiohttp
from aiohttp import web
from aiohttp.test_utils import TestServer

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


@asynccontextmanager
async def serve(handle: Handler, path: str = "/{tail:.*}") -> AsyncIterator[str]:
    """Serve `handle` for every method on `path` at 127.0.0.1; yields the base URL."""
    app = web.Application()
    app.router.add_route("*", path, handle)
    server = TestServer(app, host="127.0.0.1")
    await server.start_server()
    try:
        yield str(server.make_url("")).rstrip("/")
    finally:
        await server.close()


async def forward(target: str, request: web.Request, form: dict[str, str]) -> web.Response:
    """POST `form` to the same path on `target`; its status and JSON body, as they came."""
    async with aiohttp.ClientSession() as s, s.post(target + request.path, data=form) as r:
        return web.Response(status=r.status, body=await r.read(), content_type="application/json")
