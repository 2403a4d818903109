"""`gpu-reclaimer run` behind a web config: TLS with a generated CA, basic auth with bcrypt,
probes open, plain HTTP refused, half-sent requests dropped; a bad file is exit 2 at start."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import aiohttp
import pytest
from fakeapi import FakeCluster, served_kubeconfig
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

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def pki(tmp_path_factory: pytest.TempPathFactory) -> Pki:
    return make_pki(tmp_path_factory.mktemp("pki"))


@pytest.fixture
def served(pki: Pki, tmp_path: Path) -> Iterator[str]:
    """A running reclaimer (dry-run, Prometheus down: it serves anyway) behind TLS + auth."""
    config = pki.directory / "web.yml"
    config.write_text(web_config_text(pki, users={"prometheus": "s3cret"}))
    port = free_port()
    with served_kubeconfig(FakeCluster(), tmp_path / "kubeconfig") as kubeconfig:
        argv = [sys.executable, "-m", "reclaimer", "run", "--interval", "1h"]
        argv += ["--prometheus-url", f"http://127.0.0.1:{free_port()}"]
        argv += ["--kubeconfig", str(kubeconfig), f"--web.listen-address=127.0.0.1:{port}"]
        argv += ["--web.config.file", str(config)]
        argv += ["--web.header-timeout", f"{ABOVE_DEFAULT_HEADER_TIMEOUT_S:g}s"]
        with listening_process(argv, port, REPO):
            yield f"127.0.0.1:{port}"


async def test_tls_and_basic_auth_guard_plan_and_metrics(served: str, pki: Pki) -> None:
    tls = pki.client_context()
    ok = await fetch(f"https://{served}/metrics", context=tls, auth=("prometheus", "s3cret"))
    assert ok.status == 200 and "gpu_reclaimer_dry_run" in ok.body
    for path in ("/", "/metrics", "/plan"):
        wrong = await fetch(f"https://{served}{path}", context=tls, auth=("prometheus", "nope"))
        assert wrong.status == 401 and wrong.headers["WWW-Authenticate"].startswith("Basic")
        assert (await fetch(f"https://{served}{path}", context=tls)).status == 401
    probe = await fetch(f"https://{served}/healthz", context=tls)
    assert probe.status == 200  # kubelet probes carry no credentials
    with pytest.raises(aiohttp.ClientConnectionError):  # closed, unanswered: TLS only
        await fetch(f"http://{served}/healthz")


async def test_half_sent_requests_are_dropped(served: str, pki: Pki) -> None:
    host, port = served.split(":")
    # closed by the header timeout given on the command line, not the default's
    lasted = await dropped_after(host, int(port), pki.client_context())  # after the handshake
    assert lasted >= ABOVE_DEFAULT_HEADER_TIMEOUT_S


def test_a_bad_web_config_is_exit_2_before_anything_runs(tmp_path: Path) -> None:
    bad = tmp_path / "web.yml"
    bad.write_text("basic_auth_users:\n  a: not-a-bcrypt-hash\ntls_server_config: {cert_file: x}\n")
    argv = [sys.executable, "-m", "reclaimer", "run", "--once"]
    argv += ["--prometheus-url", "http://127.0.0.1:1", "--web.config.file", str(bad)]
    done = subprocess.run(argv, cwd=REPO, capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == 2
    assert "--web.config.file" in done.stderr and "basic_auth_users.a" in done.stderr
