"""Reload: a changed file applies without a restart, a bad one is logged once and the old config
kept, certificates rotate for new connections, and TLS cannot be switched on or off live."""

from __future__ import annotations

import asyncio
import logging
import ssl
from pathlib import Path

import pytest
import trustme
from webfixtures import (
    Clock,
    Pki,
    bcrypt_hash,
    fetch,
    rotate_server_cert,
    running,
    web_config_text,
    write_atomically,
)

from webconfig.live import LiveWebConfig
from webconfig.model import WebConfigError


def start(tmp_path: Path, text: str, clock: Clock) -> tuple[Path, LiveWebConfig]:
    path = tmp_path / "web-config.yml"
    write_atomically(path, text)
    return path, LiveWebConfig(path, clock=clock)


def errors(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.levelno >= logging.ERROR]


def test_a_bad_file_at_start_raises_with_every_problem(tmp_path: Path) -> None:
    path = tmp_path / "web-config.yml"
    write_atomically(path, "tls_server_config: {cert_file: missing.crt, key_file: missing.key}\n")
    with pytest.raises(WebConfigError) as caught:
        LiveWebConfig(path)
    assert [p.path for p in caught.value.problems] == [
        "tls_server_config.cert_file",
        "tls_server_config.key_file",
    ]
    with pytest.raises(WebConfigError, match="cannot read the file"):
        LiveWebConfig(tmp_path / "absent.yml")


def test_the_file_is_checked_at_most_once_per_interval(tmp_path: Path) -> None:
    clock = Clock()
    path, config = start(tmp_path, web_config_text(users={"a": "1"}), clock)
    write_atomically(path, web_config_text(users={"b": "2"}))
    clock.advance(0.5)
    assert set(config.current().config.basic_auth_users) == {"a"}
    clock.advance(0.5)
    assert set(config.current().config.basic_auth_users) == {"b"}


def test_a_broken_file_is_logged_once_and_the_old_config_kept(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    clock = Clock()
    path, config = start(tmp_path, web_config_text(users={"a": "1"}), clock)
    before = config.current()
    write_atomically(path, "basic_auth_users: {a: not-a-hash}\nbogus: 1\n")
    for _ in range(3):
        clock.advance()
        assert config.current() is before
    assert len(errors(caplog)) == 1
    assert "basic_auth_users.a" in errors(caplog)[0] and "bogus" in errors(caplog)[0]
    write_atomically(path, web_config_text(users={"c": "3"}))
    clock.advance()
    assert set(config.current().config.basic_auth_users) == {"c"}
    assert len(errors(caplog)) == 1


def test_a_certificate_named_but_missing_is_retried_once_it_appears(
    pki: Pki, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    clock = Clock()
    path, config = start(tmp_path, web_config_text(pki), clock)
    old = config.current()
    new_cert, new_key = tmp_path / "new.crt", tmp_path / "new.key"
    write_atomically(path, f"tls_server_config: {{cert_file: {new_cert}, key_file: {new_key}}}\n")
    clock.advance()
    assert config.current() is old and len(errors(caplog)) == 1
    new_cert.write_bytes(pki.cert.read_bytes())
    new_key.write_bytes(pki.key.read_bytes())
    clock.advance()
    current = config.current()
    assert current is not old and current.config.tls is not None
    assert current.config.tls.cert_file == new_cert


@pytest.mark.parametrize("direction", ["on", "off"])
def test_switching_tls_needs_a_restart(
    pki: Pki, tmp_path: Path, caplog: pytest.LogCaptureFixture, direction: str
) -> None:
    clock = Clock()
    first, then = (None, pki) if direction == "on" else (pki, None)
    path, config = start(tmp_path, web_config_text(first, users={"a": "1"}), clock)
    before = config.current()
    write_atomically(path, web_config_text(then, users={"b": "2"}))
    clock.advance()
    clock.advance()
    assert config.current() is before
    assert config.tls is (direction == "off")
    [message] = errors(caplog)
    assert f"turns TLS {direction}" in message and "restart" in message


async def test_a_changed_password_applies_without_restart(pki: Pki, tmp_path: Path) -> None:
    clock = Clock()
    path, config = start(tmp_path, web_config_text(pki, users={"prometheus": "old"}), clock)
    async with running(config) as server:
        url, context = f"https://127.0.0.1:{server.port}/metrics", pki.client_context()
        assert (await fetch(url, context=context, auth=("prometheus", "old"))).status == 200
        write_atomically(path, web_config_text(pki, users={"prometheus": "new"}))
        clock.advance()
        assert (await fetch(url, context=context, auth=("prometheus", "old"))).status == 401
        assert (await fetch(url, context=context, auth=("prometheus", "new"))).status == 200


async def test_a_broken_file_keeps_serving_the_old_config(
    pki: Pki, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    clock = Clock()
    path, config = start(tmp_path, web_config_text(pki, users={"prometheus": "pw"}), clock)
    async with running(config) as server:
        url, context = f"https://127.0.0.1:{server.port}/metrics", pki.client_context()
        write_atomically(path, "tls_server_config: [not, a, mapping]\n")
        pki.key.write_text("not a key")  # a half-written rotation, too
        for _ in range(2):
            clock.advance()
            assert (await fetch(url, context=context, auth=("prometheus", "pw"))).status == 200
            assert (await fetch(url, context=context, auth=("prometheus", "x"))).status == 401
    assert len(errors(caplog)) == 1


async def test_a_rotated_certificate_is_served_on_new_connections(
    pki: Pki, tmp_path: Path, other_ca: trustme.CA
) -> None:
    clock = Clock()
    _, config = start(tmp_path, web_config_text(pki), clock)
    async with running(config) as server:
        before = await served_certificate(server.port)
        rotated = rotate_server_cert(pki, other_ca)
        assert await served_certificate(server.port) == before  # not yet checked
        clock.advance()
        assert await served_certificate(server.port) == rotated
        other_ca_client = ssl.create_default_context()
        other_ca.configure_trust(other_ca_client)
        answer = await fetch(f"https://127.0.0.1:{server.port}/metrics", context=other_ca_client)
    assert answer.status == 200
    assert before != rotated


async def served_certificate(port: int) -> bytes:
    context = ssl.create_default_context()
    context.check_hostname, context.verify_mode = False, ssl.CERT_NONE
    _, writer = await asyncio.open_connection("127.0.0.1", port, ssl=context)
    ssl_object = writer.get_extra_info("ssl_object")
    der = ssl_object.getpeercert(binary_form=True)
    writer.close()
    return bytes(der)


def test_bcrypt_hash_helper_is_what_htpasswd_writes() -> None:
    assert bcrypt_hash("x").startswith("$2y$04$")  # the loader accepts htpasswd's $2y$ form
