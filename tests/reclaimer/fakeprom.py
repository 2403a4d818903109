"""A scripted fake Prometheus HTTP API on loopback: answers from a queue, records every request.

A reply's `delay` holds its answer that long; `NEVER_S` holds it until the fake closes, for a
test whose client must time out: however late a busy machine runs the client, the answer is
not there to be read.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any

from aiohttp import web
from loopback import serve

NEVER_S = 3600.0  # a delay no test outlasts: held until the fake closes


@dataclass
class Reply:
    body: Any = None  # JSON-encoded unless str
    status: int = 200
    delay: float = 0.0


@dataclass
class FakeProm:
    replies: list[Reply] = field(default_factory=list)
    default: Reply | None = None
    route: Callable[[str, dict[str, str]], Reply] | None = None  # answers by request when set
    requests: list[tuple[str, dict[str, str]]] = field(default_factory=list)
    url: str = ""
    closing: asyncio.Event = field(default_factory=asyncio.Event)

    async def handle(self, request: web.Request) -> web.Response:
        form = dict(await request.post())
        self.requests.append((request.path, {k: str(v) for k, v in form.items()}))
        if self.route is not None:
            reply: Reply | None = self.route(request.path, self.requests[-1][1])
        else:
            reply = self.replies.pop(0) if self.replies else self.default
        if reply is None:
            return web.Response(status=500, text="no scripted reply")
        if reply.delay:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self.closing.wait(), reply.delay)
        text = reply.body if isinstance(reply.body, str) else json.dumps(reply.body)
        return web.Response(status=reply.status, text=text, content_type="application/json")


def vector(*series: tuple[dict[str, str], float], at: float = 1000.0, **extra: Any) -> Any:
    result = [{"metric": m, "value": [at, repr(v)]} for m, v in series]
    return {"status": "success", "data": {"resultType": "vector", "result": result}, **extra}


def matrix(*series: tuple[dict[str, str], list[tuple[float, float]]], **extra: Any) -> Any:
    result = [{"metric": m, "values": [[t, repr(v)] for t, v in pts]} for m, pts in series]
    return {"status": "success", "data": {"resultType": "matrix", "result": result}, **extra}


def error(kind: str, msg: str) -> Any:
    return {"status": "error", "errorType": kind, "error": msg}


@asynccontextmanager
async def fake_prometheus(
    *replies: Reply,
    default: Reply | None = None,
    route: Callable[[str, dict[str, str]], Reply] | None = None,
) -> AsyncIterator[FakeProm]:
    fake = FakeProm(list(replies), default, route)
    async with serve(fake.handle, "/api/v1/{tail:.*}") as fake.url:
        try:
            yield fake
        finally:
            fake.closing.set()  # held answers go now, so that the server can stop
