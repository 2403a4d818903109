"""A guarded server in its own process, so a test can measure its memory (VmRSS) alone.

Usage: held_server.py HEADER_TIMEOUT MAX_CONNECTIONS [WEB_CONFIG_FILE]. Prints one JSON line
{"port": ..., "pid": ...} when listening; serves /metrics (a 4 KiB body, like a small exporter),
/healthz, and /stats (the guard's counts as JSON); runs until killed.
"""

from __future__ import annotations

import asyncio
import json
import os
import resource
import sys
from dataclasses import asdict
from pathlib import Path

from aiohttp import web

from webconfig.live import LiveWebConfig
from webconfig.model import Limits
from webconfig.server import WebServer, serve

SERVER = web.AppKey("server", list)  # filled once serve() returns; the app is frozen by then


async def main(header_timeout: float, max_connections: int, config_file: str | None) -> None:
    _, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    app = web.Application()
    app[SERVER] = []
    body = "".join(f'gpu_metric{{gpu="{i}"}} {i}\n' for i in range(200))[:4096]

    async def metrics(_request: web.Request) -> web.Response:
        return web.Response(text=body)

    async def healthz(_request: web.Request) -> web.Response:
        return web.Response(text="ok\n")

    async def stats(request: web.Request) -> web.Response:
        server: WebServer = request.app[SERVER][0]
        return web.json_response(asdict(server.counts()))

    app.router.add_get("/metrics", metrics)
    app.router.add_get("/healthz", healthz)
    app.router.add_get("/stats", stats)
    config = LiveWebConfig(Path(config_file)) if config_file else None
    limits = Limits(header_timeout=header_timeout, max_connections=max_connections)
    server = await serve(
        app, "127.0.0.1", 0, config=config, open_paths=("/healthz", "/stats"), limits=limits
    )
    app[SERVER].append(server)
    print(json.dumps({"port": server.port, "pid": os.getpid()}), flush=True)
    await asyncio.Event().wait()


if __name__ == "__main__":
    timeout, cap = float(sys.argv[1]), int(sys.argv[2])
    asyncio.run(main(timeout, cap, sys.argv[3] if len(sys.argv) > 3 else None))
