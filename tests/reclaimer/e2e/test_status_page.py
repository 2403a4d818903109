"""The status page end to end, in a real browser: a running `gpu-reclaimer run` (dry-run) against
the fake API server holding a small Volcano cluster and a real Prometheus holding a day of its
history (`e2e_world`), its `/` loaded by headless Chromium (`tests/browser.py`), once over plain
HTTP and once behind a web config with TLS and basic auth.

What Chromium rendered is checked, not the bytes sent: the DOM's text names the idle job, the
reason it is preempted and the starved queue, and the screenshot is not blank (the tables and
the sparklines put ink and colours on it). Chromium trusts the test CA's server certificate by
its public key pin (`--ignore-certificate-errors-spki-list`, which Chromium honours only with a
`--user-data-dir`, as `browser.py` gives it) and sends the credentials given in the URL;
without them (or with a wrong password) it renders nothing of the page.
"""

from __future__ import annotations

import asyncio
import base64
import hashlib
import sys
import time
from collections.abc import Iterator
from html.parser import HTMLParser
from pathlib import Path

import pytest
from browser import distinct_colours, dump_dom, ink, screenshot
from cryptography import x509
from cryptography.hazmat.primitives.serialization import Encoding, PublicFormat
from e2e_world import IDLE_JOB, PENDING_JOB, cluster_objects, history, wall_now
from fakeapi import FakeCluster, served_kubeconfig
from promserver import PromServer, free_port, start_prometheus
from repo_paths import REPO
from webfixtures import Pki, fetch, listening_process, make_pki, web_config_text

pytestmark = [pytest.mark.prometheus, pytest.mark.slow]
USER, PASSWORD = "operator", "s3cret"


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[PromServer, float]]:
    """A Prometheus holding the world's day of history (going on live), and the time it ends at."""
    now = wall_now()
    work = tmp_path_factory.mktemp("prom")
    with start_prometheus(work, history=history(now), carry_on=True) as server:
        yield server, now


@pytest.fixture
def prom(world: tuple[PromServer, float]) -> PromServer:
    return world[0]


@pytest.fixture
def kubeconfig(world: tuple[PromServer, float], tmp_path: Path) -> Iterator[Path]:
    """The fake API server holding the world's cluster, as of the history's end."""
    cluster = FakeCluster()
    cluster.add(*cluster_objects(world[1]))
    with served_kubeconfig(cluster, tmp_path / "kubeconfig") as path:
        yield path


class _Text(HTMLParser):
    """The text a reader sees: everything outside <head>, <style> and <title>."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.hidden = 0
        self.parts: list[str] = []
        self.tags: set[str] = set()

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.add(tag)
        self.hidden += tag in ("head", "style", "title")

    def handle_endtag(self, tag: str) -> None:
        self.hidden -= tag in ("head", "style", "title")

    def handle_data(self, data: str) -> None:
        if not self.hidden:
            self.parts.append(data)


def rendered(dom: str) -> tuple[str, set[str]]:
    """(the DOM's visible text, whitespace collapsed; the tags in it)."""
    parser = _Text()
    parser.feed(dom)
    return " ".join(" ".join(parser.parts).split()), parser.tags


def spki_pin(cert: Path) -> str:
    """base64(SHA-256(SubjectPublicKeyInfo)): the form Chromium's SPKI allow-list takes."""
    key = x509.load_pem_x509_certificate(cert.read_bytes()).public_key()
    der = key.public_bytes(Encoding.DER, PublicFormat.SubjectPublicKeyInfo)
    return base64.b64encode(hashlib.sha256(der).digest()).decode("ascii")


def reclaimer(prom: PromServer, kubeconfig: Path, port: int, *extra: str) -> list[str]:
    argv = [sys.executable, "-m", "reclaimer", "run", "--interval", "1h"]
    argv += ["--prometheus-url", prom.url, "--kubeconfig", str(kubeconfig)]
    return [*argv, f"--web.listen-address=127.0.0.1:{port}", *extra]


def wait_ready(url: str, pki: Pki | None = None) -> None:
    """Until /readyz says a cycle has completed (probes need no credentials)."""
    context = pki.client_context() if pki else None
    deadline = time.monotonic() + 300  # a give-up for a hung process, not a bound on speed
    while asyncio.run(_status(url + "/readyz", context)) != 200:
        assert time.monotonic() < deadline, "no cycle completed in time"
        time.sleep(0.5)


async def _status(url: str, context: object) -> int:
    try:
        return (await fetch(url, context=context)).status  # type: ignore[arg-type]
    except OSError:
        return 0


def check_page(url: str, png: Path, *flags: str) -> None:
    text, tags = rendered(dump_dom(url, *flags))
    assert "script" not in tags
    assert f"preempt {IDLE_JOB} IdleJobForStarvedQueue" in text, text
    assert f"for {PENDING_JOB}" in text
    queues = text[text.index("Queues") : text.index("Jobs (")]
    assert "prod 2 0 2 (1) 0 — no starved" in queues, queues
    assert "research/train research 2 busy" in text
    shot = screenshot(url, png, *flags)
    assert ink(shot) > 0.02, "the page looks blank"
    assert distinct_colours(shot) > 50


def test_the_status_page_in_chromium(prom: PromServer, kubeconfig: Path, tmp_path: Path) -> None:
    port = free_port()
    with listening_process(reclaimer(prom, kubeconfig, port), port, REPO):
        wait_ready(f"http://127.0.0.1:{port}")
        check_page(f"http://127.0.0.1:{port}/", tmp_path / "page.png")


def test_the_status_page_behind_tls_and_basic_auth(
    prom: PromServer, kubeconfig: Path, tmp_path: Path
) -> None:
    pki = make_pki(tmp_path)
    config = tmp_path / "web.yml"
    config.write_text(web_config_text(pki, users={USER: PASSWORD}))
    port = free_port()
    argv = reclaimer(prom, kubeconfig, port, "--web.config.file", str(config))
    trust = f"--ignore-certificate-errors-spki-list={spki_pin(pki.cert)}"
    with listening_process(argv, port, REPO):
        wait_ready(f"https://127.0.0.1:{port}", pki)
        refused, _ = rendered(dump_dom(f"https://127.0.0.1:{port}/", trust))
        for wrong in ("", f"{USER}:nope@"):  # Chromium shows no login prompt headless
            refused, _ = rendered(dump_dom(f"https://{wrong}127.0.0.1:{port}/", trust))
            assert IDLE_JOB not in refused
        answer = asyncio.run(fetch(f"https://127.0.0.1:{port}/", context=pki.client_context()))
        assert answer.status == 401 and answer.headers["WWW-Authenticate"].startswith("Basic")
        url = f"https://{USER}:{PASSWORD}@127.0.0.1:{port}/"
        check_page(url, tmp_path / "page.png", trust)
