"""`gpu-exporter` behind a web config, as run: TLS with a generated CA, bcrypt basic auth, probes
open, plain HTTP refused, a half-sent request dropped; bad serving flags are exit 2."""

from __future__ import annotations

import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import aiohttp
import pytest
from promserver import free_port
from repo_paths import REPO
from webfixtures import (
    ABOVE_DEFAULT_HEADER_TIMEOUT_S,
    Pki,
    dropped_after,
    fetch,
    listening_process,
    make_pki,
    web_config_text,
)

EXPORTER = [sys.executable, "-m", "exporter", "--backend", "sim"]
pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def pki(tmp_path_factory: pytest.TempPathFactory) -> Pki:
    return make_pki(tmp_path_factory.mktemp("pki"))


@pytest.fixture(scope="module")
def served(pki: Pki) -> Iterator[str]:
    config = pki.directory / "web.yml"
    config.write_text(web_config_text(pki, users={"prometheus": "s3cret"}))
    port = free_port()
    argv = [*EXPORTER, f"--web.listen-address=127.0.0.1:{port}", "--web.config.file", str(config)]
    timeout = f"{ABOVE_DEFAULT_HEADER_TIMEOUT_S:g}s"
    with listening_process([*argv, "--web.header-timeout", timeout], port, REPO):
        yield f"127.0.0.1:{port}"


async def test_metrics_need_tls_and_the_password_probes_do_not(served: str, pki: Pki) -> None:
    tls = pki.client_context()
    ok = await fetch(f"https://{served}/metrics", context=tls, auth=("prometheus", "s3cret"))
    assert ok.status in (200, 503)  # 503 only before the first collect cycle
    wrong = await fetch(f"https://{served}/metrics", context=tls, auth=("prometheus", "x"))
    assert wrong.status == 401
    assert (await fetch(f"https://{served}/metrics", context=tls)).status == 401
    for probe in ("/healthz", "/health", "/readyz"):
        assert (await fetch(f"https://{served}{probe}", context=tls)).status in (200, 503)
    with pytest.raises(aiohttp.ClientConnectionError):  # closed, unanswered: TLS only
        await fetch(f"http://{served}/healthz")


async def test_a_half_sent_request_is_dropped(served: str, pki: Pki) -> None:
    host, port = served.split(":")
    # closed by the header timeout given on the command line, not the default's
    lasted = await dropped_after(host, int(port), pki.client_context())  # after the handshake
    assert lasted >= ABOVE_DEFAULT_HEADER_TIMEOUT_S


def _exit(*extra: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*EXPORTER, *extra], cwd=REPO, capture_output=True, text=True, timeout=60, check=False
    )


def test_an_address_that_cannot_be_bound_is_exit_2() -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        done = _exit(f"--web.listen-address=127.0.0.1:{port}")
    assert done.returncode == 2
    assert f"cannot listen on 127.0.0.1:{port}" in done.stderr


@pytest.mark.parametrize(
    ("flags", "says"),
    [
        (["--collect-interval", "0.05"], "at least 0.1 seconds"),
        (["--web.header-timeout", "soon"], "--web.header-timeout"),
        (["--web.max-connections", "0"], "--web.max-connections"),
    ],
)
def test_bad_serving_flags_are_exit_2(flags: list[str], says: str, tmp_path: Path) -> None:
    done = _exit(*flags, f"--web.listen-address=127.0.0.1:{free_port()}")
    assert done.returncode == 2 and says in done.stderr


def test_a_bad_web_config_is_exit_2(tmp_path: Path) -> None:
    bad = tmp_path / "web.yml"
    bad.write_text("tls_server_config: {cert_file: missing.crt}\n")
    done = _exit("--web.config.file", str(bad), f"--web.listen-address=127.0.0.1:{free_port()}")
    assert done.returncode == 2 and "tls_server_config" in done.stderr
