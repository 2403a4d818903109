"""A configured Content-Security-Policy is combined with a response's own, the strictest of both:
table tests of `csp.combine`, and the reclaimer's status page policy through a real server with a
web config that sets another one."""

from __future__ import annotations

from pathlib import Path

import pytest
from aiohttp import web
from webfixtures import fetch, running, web_config_text, write_atomically

from reclaimer.report.status.page import security_headers
from webconfig.csp import combine, parse
from webconfig.live import LiveWebConfig

PAGE = security_headers()["Content-Security-Policy"]
HASH = parse(PAGE)["style-src"][0]


@pytest.mark.parametrize(
    ("first", "second", "expected"),
    [
        pytest.param(
            "default-src 'none'; style-src 'sha256-x'; frame-ancestors 'none'",
            "default-src 'self'",
            "default-src 'none'; style-src 'none'; frame-ancestors 'none'",
            id="a-hash-is-not-allowed-by-self",
        ),
        pytest.param(
            "default-src 'none'; style-src 'sha256-x'; frame-ancestors 'none'",
            "default-src 'self'; style-src 'self' 'unsafe-inline'; frame-ancestors https://a",
            "default-src 'none'; style-src 'sha256-x'; frame-ancestors 'none'",
            id="the-page-keeps-its-hash-where-inline-is-allowed",
        ),
        pytest.param(
            "img-src https://a.example data:",
            "default-src *",
            "img-src https://a.example; default-src *",
            id="star-allows-hosts-not-data",
        ),
        pytest.param(
            "script-src 'self' https://cdn",
            "script-src https://cdn 'unsafe-eval'",
            "script-src https://cdn",
            id="same-tokens-intersect",
        ),
        pytest.param(
            "default-src 'self'",
            "img-src 'self' https://i; report-uri /r",
            "default-src 'self'; img-src 'self'; report-uri /r",
            id="a-fallback-counts-and-other-directives-are-kept",
        ),
        pytest.param(
            "sandbox allow-forms allow-scripts",
            "sandbox allow-scripts; upgrade-insecure-requests",
            "sandbox allow-scripts; upgrade-insecure-requests",
            id="sandbox-keeps-shared-flags",
        ),
        pytest.param(
            "Style-Src 'self'; style-src *",
            "STYLE-SRC 'SELF'",
            "style-src 'self'",
            id="names-case-blind-a-repeat-ignored",
        ),
    ],
)
def test_combine(first: str, second: str, expected: str) -> None:
    assert combine(first, second) == expected


def test_the_page_policy_survives_a_looser_configured_one() -> None:
    looser = "default-src 'self'; style-src 'unsafe-inline'; frame-ancestors 'self'; img-src *"
    combined = parse(combine(PAGE, looser))
    for name, value in parse(PAGE).items():
        assert combined[name] == value, name  # the page's policy was the stricter everywhere


async def test_a_configured_policy_is_combined_with_the_pages_own(tmp_path: Path) -> None:
    app = web.Application()

    async def page(_request: web.Request) -> web.Response:
        return web.Response(text="<p>status</p>", headers=security_headers())

    async def other(_request: web.Request) -> web.Response:
        return web.Response(text="no policy of its own\n")

    app.router.add_get("/", page)
    app.router.add_get("/metrics", other)
    configured = "default-src 'self'; style-src 'self' 'unsafe-inline'; img-src *"
    path = tmp_path / "web-config.yml"
    write_atomically(path, web_config_text(headers={"Content-Security-Policy": f'"{configured}"'}))
    async with running(LiveWebConfig(path), app=app) as server:
        base = f"http://127.0.0.1:{server.port}"
        got = parse((await fetch(base + "/")).headers["Content-Security-Policy"])
        plain = (await fetch(base + "/metrics")).headers["Content-Security-Policy"]
    assert got["style-src"] == (HASH,)  # the stylesheet still loads
    assert got["frame-ancestors"] == ("'none'",) and got["script-src"] == ("'none'",)
    assert got["default-src"] == ("'none'",) and got["img-src"] == ("'none'",)
    assert plain == configured  # a response without a policy gets the configured one as is
