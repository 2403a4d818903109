"""Over real TLS (a trustme CA): basic auth, client certificates, TLS versions, headers and the
open probe paths."""

from __future__ import annotations

import asyncio
import ssl
from pathlib import Path

import aiohttp
import pytest
import trustme
from webfixtures import Pki, fetch, running, web_config_text, write_atomically

from webconfig.live import LiveWebConfig

USERS = {"prometheus": "s3cret"}


def live(tmp_path: Path, text: str) -> LiveWebConfig:
    path = tmp_path / "web-config.yml"
    write_atomically(path, text)
    return LiveWebConfig(path)


async def test_the_right_password_gets_200_and_a_wrong_one_401(pki: Pki, tmp_path: Path) -> None:
    config = live(tmp_path, web_config_text(pki, users=USERS))
    async with running(config) as server:
        url = f"https://127.0.0.1:{server.port}/metrics"
        context = pki.client_context()
        good = await fetch(url, context=context, auth=("prometheus", "s3cret"))
        wrong = await fetch(url, context=context, auth=("prometheus", "guess"))
        unknown = await fetch(url, context=context, auth=("mallory", "s3cret"))
        missing = await fetch(url, context=context)
    assert (good.status, good.body) == (200, "up 1\n")
    for refused in (wrong, unknown, missing):
        assert refused.status == 401
        assert refused.headers["WWW-Authenticate"] == "Basic"
        assert "up 1" not in refused.body
    assert good.headers["Connection"] == "close"  # one request per connection, said out loud


async def test_unknown_paths_need_auth_too(pki: Pki, tmp_path: Path) -> None:
    config = live(tmp_path, web_config_text(pki, users=USERS))
    async with running(config) as server:
        answer = await fetch(f"https://127.0.0.1:{server.port}/nope", context=pki.client_context())
    assert answer.status == 401  # not 404: no path discovery without credentials


@pytest.mark.parametrize("path", ["/healthz", "/health", "/readyz"])
async def test_probe_paths_are_open_without_auth(pki: Pki, tmp_path: Path, path: str) -> None:
    config = live(tmp_path, web_config_text(pki, users=USERS))
    async with running(config) as server:
        answer = await fetch(f"https://127.0.0.1:{server.port}{path}", context=pki.client_context())
    assert (answer.status, answer.body) == (200, "ok\n")


async def test_configured_headers_are_on_every_response(pki: Pki, tmp_path: Path) -> None:
    headers = {"X-Frame-Options": "deny", "Strict-Transport-Security": "max-age=31536000"}
    config = live(tmp_path, web_config_text(pki, users=USERS, headers=headers))
    async with running(config) as server:
        base = f"https://127.0.0.1:{server.port}"
        context = pki.client_context()
        answers = [
            await fetch(f"{base}/metrics", context=context, auth=("prometheus", "s3cret")),
            await fetch(f"{base}/metrics", context=context),  # the 401
            await fetch(f"{base}/healthz", context=context),
        ]
    assert [a.status for a in answers] == [200, 401, 200]
    for answer in answers:
        assert {name: answer.headers.get(name) for name in headers} == headers


async def test_plain_http_against_the_tls_port_fails(pki: Pki, tmp_path: Path) -> None:
    config = live(tmp_path, web_config_text(pki))
    async with running(config) as server:
        with pytest.raises(aiohttp.ClientError):
            await fetch(f"http://127.0.0.1:{server.port}/metrics")
        reader, writer = await asyncio.open_connection("127.0.0.1", server.port)
        writer.write(b"GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n")
        answer = await asyncio.wait_for(reader.read(), 5)  # read to EOF: the server closed
        assert not answer.startswith(b"HTTP/")  # at most a TLS alert, never an HTTP answer
        writer.close()
        counts = server.counts()
        assert counts.tls_failures == counts.accepted >= 2
        # ...and a TLS client still gets through afterwards.
        answer = await fetch(
            f"https://127.0.0.1:{server.port}/metrics", context=pki.client_context()
        )
    assert answer.status == 200


async def test_a_client_certificate_is_required_and_accepted(pki: Pki, tmp_path: Path) -> None:
    config = live(tmp_path, web_config_text(pki, client_auth="RequireAndVerifyClientCert"))
    async with running(config) as server:
        url = f"https://127.0.0.1:{server.port}/metrics"
        with pytest.raises(aiohttp.ClientError):
            await fetch(url, context=pki.client_context())
        with pytest.raises(aiohttp.ClientError):
            await fetch(f"https://127.0.0.1:{server.port}/healthz", context=pki.client_context())
        answer = await fetch(url, context=pki.client_context(with_cert=True))
    assert answer.status == 200


async def test_a_certificate_from_another_ca_is_refused(
    pki: Pki, tmp_path: Path, other_ca: trustme.CA
) -> None:
    stranger = tmp_path / "stranger.pem"
    other_ca.issue_cert("stranger").private_key_and_cert_chain_pem.write_to_path(stranger)
    config = live(tmp_path, web_config_text(pki, client_auth="RequireAndVerifyClientCert"))
    context = pki.client_context()
    context.load_cert_chain(stranger)
    async with running(config) as server:
        with pytest.raises(aiohttp.ClientError):
            await fetch(f"https://127.0.0.1:{server.port}/metrics", context=context)


async def test_verify_if_given_lets_certificateless_probes_in(pki: Pki, tmp_path: Path) -> None:
    config = live(tmp_path, web_config_text(pki, client_auth="VerifyClientCertIfGiven"))
    async with running(config) as server:
        url = f"https://127.0.0.1:{server.port}/metrics"
        without = await fetch(url, context=pki.client_context())
        with_cert = await fetch(url, context=pki.client_context(with_cert=True))
    assert (without.status, with_cert.status) == (200, 200)


async def test_min_version_tls13_refuses_a_tls12_client(pki: Pki, tmp_path: Path) -> None:
    config = live(tmp_path, web_config_text(pki, min_version="TLS13"))
    async with running(config) as server:
        url = f"https://127.0.0.1:{server.port}/metrics"
        tls12 = pki.client_context(max_version=ssl.TLSVersion.TLSv1_2)
        with pytest.raises(aiohttp.ClientError):
            await fetch(url, context=tls12)
        answer = await fetch(url, context=pki.client_context())
    assert answer.status == 200


async def test_the_default_minimum_accepts_tls12(pki: Pki, tmp_path: Path) -> None:
    config = live(tmp_path, web_config_text(pki))
    async with running(config) as server:
        tls12 = pki.client_context(max_version=ssl.TLSVersion.TLSv1_2)
        answer = await fetch(f"https://127.0.0.1:{server.port}/metrics", context=tls12)
    assert answer.status == 200


async def test_plain_http_with_basic_auth(tmp_path: Path) -> None:
    config = live(tmp_path, web_config_text(users=USERS))
    async with running(config) as server:
        assert not server.tls
        url = f"http://127.0.0.1:{server.port}/metrics"
        good = await fetch(url, auth=("prometheus", "s3cret"))
        bad = await fetch(url, auth=("prometheus", "nope"))
    assert (good.status, bad.status) == (200, 401)
