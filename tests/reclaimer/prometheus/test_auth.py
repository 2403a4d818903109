"""Prometheus credentials: sent as configured, rotated from files, never shown anywhere."""

from __future__ import annotations

import asyncio
import base64
import io
import json
import subprocess
import sys
from collections.abc import AsyncIterator, Iterator
from contextlib import redirect_stdout
from pathlib import Path

import pytest
from aiohttp import web
from e2e_world import cluster_objects, history, wall_now
from fakeapi import FakeCluster, served_kubeconfig
from loopback import forward, serve
from promserver import PromServer, free_port, start_prometheus
from repo_paths import REPO

from reclaimer.cli import main
from reclaimer.prometheus.auth import CredentialError, Credentials, parse_header, redact_url
from reclaimer.prometheus.client import PromClient, PromError, RetryPolicy

FAST = RetryPolicy(attempts=1, timeout=60.0)  # only a hung Prometheus takes this long


@pytest.mark.parametrize(
    ("url", "shown"),
    [
        ("http://prom:9090", "http://prom:9090"),
        ("http://me:s3cret@prom:9090/x", "http://me:xxxxx@prom:9090/x"),
        ("https://me:p%40ss@[::1]:9090", "https://me:xxxxx@[::1]:9090"),
        ("http://onlyuser@prom", "http://onlyuser@prom"),
    ],
)
def test_urls_are_redacted_like_go_does(url: str, shown: str) -> None:
    assert redact_url(url) == shown


@pytest.mark.parametrize(
    ("text", "ok"),
    [
        ("X-Scope-OrgID=tenant-a", ("X-Scope-OrgID", "tenant-a")),
        ("X-Token=a=b", ("X-Token", "a=b")),
        ("no-equals", None),
        ("=value", None),
        ("Bad Name=v", None),
        ("Authorization=Bearer x", None),
    ],
)
def test_header_flags(text: str, ok: tuple[str, str] | None) -> None:
    if ok is None:
        with pytest.raises(CredentialError):
            parse_header(text)
    else:
        assert parse_header(text) == ok


def test_bad_credential_flags_are_refused_before_start(tmp_path: Path) -> None:
    token, basic = tmp_path / "token", tmp_path / "basic"
    token.write_text("t0k3n\n")
    basic.write_text("nouser\n")
    with pytest.raises(CredentialError, match="choose one"):
        Credentials(bearer_token_file=token, basic_auth_file=basic)
    with pytest.raises(CredentialError, match="no such file"):
        Credentials(bearer_token_file=tmp_path / "missing")
    with pytest.raises(CredentialError, match="username:password"):
        Credentials(basic_auth_file=basic)
    (tmp_path / "empty").write_text("")
    with pytest.raises(CredentialError, match="empty"):
        Credentials(bearer_token_file=tmp_path / "empty")


class Gate:
    """A proxy in front of a real Prometheus that demands a bearer token and a tenant header."""

    def __init__(self, target: str, token: str, tenant: str) -> None:
        self.target, self.token, self.tenant = target, token, tenant
        self.seen: list[dict[str, str]] = []

    async def handle(self, request: web.Request) -> web.Response:
        self.seen.append(dict(request.headers))
        if request.headers.get("Authorization") != f"Bearer {self.token}":
            return web.Response(status=401, text="unauthorized")
        if request.headers.get("X-Scope-OrgID") != self.tenant:
            return web.Response(status=403, text="no tenant")
        form = {k: str(v) for k, v in (await request.post()).items()}
        return await forward(self.target, request, form)


@pytest.fixture(scope="module")
def prom(tmp_path_factory: pytest.TempPathFactory) -> Iterator[PromServer]:
    work = tmp_path_factory.mktemp("prom")
    with start_prometheus(work, history=history(wall_now()), carry_on=True) as s:
        yield s


@pytest.fixture
async def gate(prom: PromServer) -> AsyncIterator[tuple[Gate, str]]:
    g = Gate(prom.url, "tok-1", "tenant-a")
    async with serve(g.handle) as url:
        yield g, url


async def test_a_rotated_token_is_read_again(gate: tuple[Gate, str], tmp_path: Path) -> None:
    g, url = gate
    token = tmp_path / "token"
    token.write_text("tok-1\n")
    creds = Credentials(bearer_token_file=token, headers={"X-Scope-OrgID": "tenant-a"})
    async with PromClient(url, FAST, credentials=creds) as client:
        await client.query("up")
        g.token = "tok-2"
        token.write_text("tok-2 \n")  # the kubelet rotates a projected token in place
        await client.query("up")
    assert [h["Authorization"] for h in g.seen] == ["Bearer tok-1", "Bearer tok-2"]


@pytest.mark.prometheus
@pytest.mark.slow
async def test_a_cycle_runs_through_an_authenticating_proxy(
    gate: tuple[Gate, str], tmp_path: Path
) -> None:
    g, url = gate
    token = tmp_path / "token"
    token.write_text("tok-1")
    cluster = FakeCluster()
    cluster.add(*cluster_objects(wall_now()))
    argv = ["run", "--once", "--json", "--prometheus-url", url]
    argv += ["--prometheus.bearer-token-file", str(token)]
    argv += ["--prometheus.header", "X-Scope-OrgID=tenant-a"]
    with served_kubeconfig(cluster, tmp_path / "kubeconfig") as kubeconfig:
        out = io.StringIO()
        with redirect_stdout(out):
            code = await _run_in_thread([*argv, "--kubeconfig", str(kubeconfig)])
    report = json.loads(out.getvalue())
    assert code == 0, report["cycle"]
    assert report["plan"]["actions"], "the idle job should be planned through the proxy"
    assert g.seen and all(h.get("X-Scope-OrgID") == "tenant-a" for h in g.seen)


async def _run_in_thread(argv: list[str]) -> int:
    return await asyncio.to_thread(main, argv)


@pytest.mark.parametrize("in_url", [True, False], ids=["password-in-url", "token-file"])
async def test_errors_never_carry_a_secret(tmp_path: Path, in_url: bool) -> None:
    token = tmp_path / "token"
    token.write_text("tok-SECRET-1")
    headers = {"X-Scope-OrgID": "org-SECRET-2"}
    creds = Credentials(headers=headers) if in_url else Credentials(token, headers=headers)
    auth = "admin:pw-SECRET-3@" if in_url else ""
    url = f"http://{auth}127.0.0.1:{free_port()}"
    async with PromClient(url, FAST, credentials=creds) as client:
        with pytest.raises(PromError) as caught:
            await client.query("up")
    assert "SECRET" not in str(caught.value) and "unreachable" in str(caught.value)
    assert ("admin:xxxxx@127.0.0.1" in str(caught.value)) is in_url


def test_an_auth_file_and_a_password_in_the_url_are_refused(tmp_path: Path) -> None:
    token = tmp_path / "token"
    token.write_text("t0k3n")
    with pytest.raises(CredentialError, match="choose one"):
        PromClient("http://a:b@prom:9090", credentials=Credentials(bearer_token_file=token))


def test_nothing_shows_a_secret_when_prometheus_is_down(tmp_path: Path) -> None:
    """Logs, the table, the JSON report: a down Prometheus must not leak what guards it."""
    token = tmp_path / "token"
    token.write_text("tok-SECRET-1")
    cluster = FakeCluster()
    cluster.add(*cluster_objects(wall_now()))
    port = free_port()
    runs = [
        (["--json", "--prometheus.bearer-token-file", str(token)], f"http://127.0.0.1:{port}"),
        ([], f"http://admin:pw-SECRET-3@127.0.0.1:{port}"),
    ]
    with served_kubeconfig(cluster, tmp_path / "kubeconfig") as kubeconfig:
        outputs = []
        for extra, url in runs:
            argv = [sys.executable, "-m", "reclaimer", "run", "--once", *extra]
            argv += ["--prometheus-url", url, "--kubeconfig", str(kubeconfig)]
            argv += ["--log.level", "debug", "--prometheus.header", "X-Scope-OrgID=org-SECRET-2"]
            done = subprocess.run(
                argv, cwd=REPO, capture_output=True, text=True, timeout=120, check=False
            )
            assert done.returncode == 1, done.stderr
            outputs += [done.stdout, done.stderr]
    text = "\n".join(outputs)
    assert "unreachable" in text and "admin:xxxxx@127.0.0.1" in text
    for secret in ("SECRET", base64.b64encode(b"admin:pw-SECRET-3").decode()):
        assert secret not in text
