"""The web config's per-request rules on an aiohttp app: basic auth and the configured headers.

Both read `LiveWebConfig.current()` on every request, so a reloaded password or header applies to
the next request. Auth is the outermost middleware, so it runs before the app's own and for every
path, unknown ones included (an unauthenticated client learns nothing, not even a 404), except the
`open_paths` the caller names (exact matches of the decoded path, as the router sees it). The
headers are set when any response is prepared, the 401 included, as exporter-toolkit does; a
`Content-Security-Policy` the response already has (the status page's own) is combined with the
configured one, the strictest of both (`csp.combine`), not replaced. While
too many password checks wait for bcrypt (see `auth` and `admission`), an uncached password gets
503 with Retry-After instead of a verdict.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Collection

from aiohttp import web

from webconfig import csp
from webconfig.auth import BasicAuth, Outcome
from webconfig.live import LiveWebConfig

_CSP = "content-security-policy"
_Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


def install_access_rules(
    app: web.Application, live: LiveWebConfig, open_paths: Collection[str], auth: BasicAuth
) -> None:
    """Add the auth middleware and the header hook to `app` (which must not be frozen yet)."""
    open_set = frozenset(open_paths)

    @web.middleware
    async def basic_auth(request: web.Request, handler: _Handler) -> web.StreamResponse:
        users = live.current().config.basic_auth_users
        if not users or request.path in open_set:
            return await handler(request)
        client = request.remote or ""  # the peer address: fair turns at bcrypt (see `admission`)
        outcome = await auth.check(users, request.headers.get("Authorization"), client)
        if outcome is Outcome.ALLOWED:
            return await handler(request)
        if outcome is Outcome.BUSY:
            return web.Response(status=503, text="busy\n", headers={"Retry-After": "1"})
        return web.Response(
            status=401, text="Unauthorized\n", headers={"WWW-Authenticate": "Basic"}
        )

    async def configured_headers(_request: web.Request, response: web.StreamResponse) -> None:
        for name, value in live.current().config.headers.items():
            own = response.headers.get(name) if name.lower() == _CSP else None
            # A policy of the response's own (the status page's) is combined, never replaced.
            response.headers[name] = csp.combine(own, value) if own else value

    app.middlewares.insert(0, basic_auth)
    app.on_response_prepare.append(configured_headers)
