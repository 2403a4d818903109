"""The stdlib API-server reader: URLs, in-cluster discovery, TLS, and how failures read."""

from __future__ import annotations

import shutil
import ssl
import subprocess
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import pytest
from fake_pods_api import FakePodsApi, pod_json, serve

from exporter.node.apiserver import (
    ApiEndpoint,
    ApiServerError,
    in_cluster_endpoint,
    list_pod_pages,
    pods_url,
)


@pytest.mark.parametrize(
    ("base", "node", "token"),
    [
        ("https://10.0.0.1:443", "gpu-node-1", None),
        ("https://api.example:6443/", "node.with.dots", "eyJ2Ijoi/+=="),
        ("http://127.0.0.1:8001/proxy/prefix", "a&b=c d", "next"),
    ],
    ids=["plain", "trailing-slash-and-odd-token", "prefix-and-hostile-node-name"],
)
def test_pods_url_encodes_every_query_value(base: str, node: str, token: str | None) -> None:
    url = urlsplit(pods_url(base, node, 250, token))
    assert url.path == urlsplit(base).path.rstrip("/") + "/api/v1/pods"
    expected = {"fieldSelector": [f"spec.nodeName={node}"], "limit": ["250"]}
    if token is not None:
        expected["continue"] = [token]
    assert parse_qs(url.query, strict_parsing=True) == expected
    assert "fieldSelector=spec.nodeName%3D" in url.query


@pytest.mark.parametrize(
    ("env", "base_url"),
    [
        ({}, None),
        ({"KUBERNETES_SERVICE_HOST": "10.96.0.1"}, None),
        ({"KUBERNETES_SERVICE_HOST": "10.96.0.1", "KUBERNETES_SERVICE_PORT": "443"}, "10.96.0.1"),
        ({"KUBERNETES_SERVICE_HOST": "fd00::1", "KUBERNETES_SERVICE_PORT": "443"}, "[fd00::1]"),
    ],
    ids=["outside", "host-without-port", "ipv4", "ipv6"],
)
def test_in_cluster_endpoint(env: dict[str, str], base_url: str | None) -> None:
    endpoint = in_cluster_endpoint(env, Path("/sa"))
    if base_url is None:
        assert endpoint is None
    else:
        assert endpoint == ApiEndpoint(
            f"https://{base_url}:443", Path("/sa/token"), Path("/sa/ca.crt")
        )


def _list(endpoint: ApiEndpoint) -> list[str]:
    pages = list_pod_pages(endpoint, "n", timeout=60, page_limit=1)  # a give-up for a hang
    return [item["metadata"]["uid"] for page in pages for item in page["items"]]


def test_a_status_body_gives_the_reason() -> None:
    fake = FakePodsApi(status=403)
    with serve(fake) as url, pytest.raises(ApiServerError, match=r"HTTP 403: pods is forbidden"):
        _list(ApiEndpoint(url))


def test_redirects_are_refused_so_the_token_stays_home(tmp_path: Path) -> None:
    elsewhere = FakePodsApi(pods=[pod_json("u", "ns", "p", "n", {})])
    token = tmp_path / "token"
    token.write_text("secret")
    with (
        serve(elsewhere) as target,
        serve(FakePodsApi(redirect_to=target + "/api/v1/pods")) as url,
        pytest.raises(ApiServerError, match="HTTP 302"),
    ):
        _list(ApiEndpoint(url, token))
    assert elsewhere.seen == []


def test_an_empty_token_file_fails_before_sending(tmp_path: Path) -> None:
    fake = FakePodsApi()
    (tmp_path / "token").write_text("\n")
    with serve(fake) as url, pytest.raises(ApiServerError, match="is empty"):
        _list(ApiEndpoint(url, tmp_path / "token"))
    assert fake.seen == []


@pytest.fixture(scope="module")
def certificate(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, Path]]:
    """A self-signed certificate for 127.0.0.1 (its own CA), made by the openssl binary."""
    openssl = shutil.which("openssl")
    if openssl is None:
        pytest.fail("no openssl binary to make a test certificate: run `make deps`", pytrace=False)
    out = tmp_path_factory.mktemp("tls")
    cert, key = out / "cert.pem", out / "key.pem"
    san = "subjectAltName=IP:127.0.0.1"
    args = ["req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2", "-subj", "/CN=x"]
    subprocess.run(
        [openssl, *args, "-addext", san, "-keyout", str(key), "-out", str(cert)],
        check=True,
        capture_output=True,
    )
    yield cert, key


def _tls(certificate: tuple[Path, Path]) -> ssl.SSLContext:
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(*certificate)
    return context


@pytest.mark.parametrize(
    ("trust", "works"),
    [("ca-file", True), ("insecure", True), ("system-store", False), ("missing-ca-file", False)],
)
def test_https_verifies_against_the_given_ca(
    certificate: tuple[Path, Path], tmp_path: Path, trust: str, works: bool
) -> None:
    fake = FakePodsApi(
        pods=[pod_json("u1", "ns", "p", "n", {}), pod_json("u2", "ns", "q", "n", {})]
    )
    with serve(fake, _tls(certificate)) as url:
        endpoint = {
            "ca-file": ApiEndpoint(url, ca_file=certificate[0]),
            "insecure": ApiEndpoint(url, insecure_skip_tls_verify=True),
            "system-store": ApiEndpoint(url),
            "missing-ca-file": ApiEndpoint(url, ca_file=tmp_path / "absent.crt"),
        }[trust]
        if works:
            assert _list(endpoint) == ["u1", "u2"]
        else:
            with pytest.raises(ApiServerError, match=r"CERTIFICATE_VERIFY_FAILED|CA file"):
                _list(endpoint)
            assert fake.seen == []
