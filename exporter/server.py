"""HTTP endpoints: `/metrics`, `/healthz`, `/readyz` (aiohttp).

`/metrics` returns the bytes the collect loop rendered last (gzip-encoded when the client accepts
it); the handler does no I/O and no rendering, so a scrape costs the same however large the node.
`/healthz` (and dcgm-exporter's `/health`) answers 503 once no collect cycle has completed for
about three cycles, e.g. a call stuck in a wedged driver, so that the kubelet restarts the pod;
`/readyz` answers 503 until the first snapshot is published and whenever the data served is that
old (`exporter.health`). The collect loop is the only writer; handlers read its `published`
reference once.
"""

from __future__ import annotations

from typing import Protocol

from aiohttp import web

from exporter.cycle import Published
from exporter.render import CONTENT_TYPE


class HasPublished(Protocol):
    @property
    def published(self) -> Published | None: ...

    def liveness(self) -> str | None: ...

    def readiness(self) -> str | None: ...


def accepts_gzip(header: str) -> bool:
    """Pure: whether an Accept-Encoding header allows gzip (`gzip;q=0` refuses it)."""
    for part in header.split(","):
        token, _, params = part.partition(";")
        if token.strip().lower() not in ("gzip", "*"):
            continue
        q = 1.0
        for param in params.split(";"):
            key, _, value = param.partition("=")
            if key.strip().lower() == "q":
                try:
                    q = float(value)
                except ValueError:
                    q = 0.0
        return q > 0
    return False


PROBES = ("/healthz", "/health", "/readyz")
"""Open without credentials under a web config, so kubelet probes work (they say nothing)."""


def make_app(loop: HasPublished) -> web.Application:
    async def metrics(request: web.Request) -> web.Response:
        published = loop.published
        if published is None:
            return web.Response(status=503, text="no collect cycle has completed yet\n")
        exposition = published.exposition
        headers = {"Content-Type": CONTENT_TYPE, "Vary": "Accept-Encoding"}
        if accepts_gzip(request.headers.get("Accept-Encoding", "")):
            headers["Content-Encoding"] = "gzip"
            return web.Response(body=exposition.gzipped, headers=headers)
        return web.Response(body=exposition.body, headers=headers)

    async def healthz(_request: web.Request) -> web.Response:
        problem = loop.liveness()
        if problem is not None:
            return web.Response(status=503, text=problem + "\n")
        return web.Response(text="ok\n")

    async def readyz(_request: web.Request) -> web.Response:
        problem = loop.readiness()
        if problem is not None:
            return web.Response(status=503, text=problem + "\n")
        return web.Response(text="ready\n")

    async def index(_request: web.Request) -> web.Response:
        return web.Response(
            text="gpu-exporter: /metrics /healthz /readyz\n", content_type="text/plain"
        )

    app = web.Application()
    app.router.add_get("/metrics", metrics)
    app.router.add_get("/healthz", healthz)
    app.router.add_get("/health", healthz)  # dcgm-exporter's path, for drop-in probes
    app.router.add_get("/readyz", readyz)
    app.router.add_get("/", index)
    return app
