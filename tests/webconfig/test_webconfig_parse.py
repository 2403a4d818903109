"""The web config loader: exporter-toolkit's file format in, a WebConfig or every problem out."""

from __future__ import annotations

from pathlib import Path

import pytest
from webfixtures import bcrypt_hash

from webconfig.model import ClientAuth, TLSServerConfig, TLSVersion, WebConfig, WebConfigError
from webconfig.parse import parse_web_config

DIR = Path("/etc/web")
HASH = bcrypt_hash("secret")


def problems(text: str) -> dict[str, str]:
    with pytest.raises(WebConfigError) as caught:
        parse_web_config(text, DIR, source="web.yml")
    return {problem.path: problem.message for problem in caught.value.problems}


def test_a_full_config_with_relative_and_absolute_paths() -> None:
    text = f"""
tls_server_config:
  cert_file: tls/server.crt
  key_file: /secrets/server.key
  client_auth_type: RequireAndVerifyClientCert
  client_ca_file: ca.crt
  min_version: TLS13
basic_auth_users:
  prometheus: '{HASH}'
http_server_config:
  http2: true
  headers:
    X-Frame-Options: deny
    Strict-Transport-Security: max-age=31536000
    X-XSS-Protection: ""
"""
    assert parse_web_config(text, DIR) == WebConfig(
        tls=TLSServerConfig(
            cert_file=Path("/etc/web/tls/server.crt"),
            key_file=Path("/secrets/server.key"),
            client_auth_type=ClientAuth.REQUIRE_AND_VERIFY_CLIENT_CERT,
            client_ca_file=Path("/etc/web/ca.crt"),
            min_version=TLSVersion.TLS13,
        ),
        basic_auth_users={"prometheus": HASH},
        headers={"X-Frame-Options": "deny", "Strict-Transport-Security": "max-age=31536000"},
    )


@pytest.mark.parametrize(
    "text",
    [
        "",
        "# only a comment\n",
        "tls_server_config: {}\n",
        "tls_server_config:\nbasic_auth_users:\n",
    ],
    ids=["empty", "comment", "empty-tls-section", "null-sections"],
)
def test_nothing_configured_is_plain_http_without_auth(text: str) -> None:
    config = parse_web_config(text, DIR)
    assert config == WebConfig()
    assert config.tls is None and not config.auth_required


def test_defaults_match_exporter_toolkit() -> None:
    config = parse_web_config("tls_server_config: {cert_file: c, key_file: k}\n", DIR)
    assert config.tls is not None
    assert config.tls.client_auth_type is ClientAuth.NO_CLIENT_CERT
    assert (config.tls.min_version, config.tls.max_version) == (TLSVersion.TLS12, TLSVersion.TLS13)


def test_every_problem_is_listed_at_once_with_its_path() -> None:
    text = f"""
tls_server_config:
  cert_file: server.crt
  client_auth_type: RequireAnyClientCert
  min_version: TLS11
  cipher_suites: [TLS_AES_128_GCM_SHA256]
basic_auth_users:
  alice: plain-text-password
  bob: '{HASH}'
  'carol:x': '{HASH}'
http_server_config:
  headers:
    X-Powered-By: me
    X-Frame-Options: allow
rate_limit: {{interval: 1s, burst: 10}}
metrics_path: /metrics
"""
    found = problems(text)
    assert set(found) == {
        "tls_server_config.key_file",
        "tls_server_config.client_auth_type",
        "tls_server_config.min_version",
        "tls_server_config.cipher_suites",
        "basic_auth_users.alice",
        "basic_auth_users.carol:x",
        "http_server_config.headers.X-Powered-By",
        "http_server_config.headers.X-Frame-Options",
        "rate_limit",
        "metrics_path",
    }
    assert "required" in found["tls_server_config.key_file"]
    assert "cannot do" in found["tls_server_config.client_auth_type"]
    assert "bcrypt" in found["basic_auth_users.alice"]
    assert "plain-text-password" not in str(found)  # a pasted password is never echoed
    assert "does not support" in found["rate_limit"]
    assert "unknown key" in found["metrics_path"]


@pytest.mark.parametrize(
    ("text", "path", "fragment"),
    [
        ("tls_server_config:\n  key_file: k\n", "tls_server_config.cert_file", "required"),
        (
            "tls_server_config: {cert_file: c, key_file: k, client_ca_file: ca}\n",
            "tls_server_config.client_ca_file",
            "NoClientCert",
        ),
        (
            "tls_server_config: {cert_file: c, key_file: k, "
            "client_auth_type: RequireAndVerifyClientCert}\n",
            "tls_server_config.client_ca_file",
            "required by RequireAndVerifyClientCert",
        ),
        (
            "tls_server_config: {cert_file: c, key_file: k, client_auth_type: RequestClientCert}\n",
            "tls_server_config.client_auth_type",
            "without verifying",
        ),
        (
            "tls_server_config: {cert_file: c, key_file: k, client_auth_type: Sometimes}\n",
            "tls_server_config.client_auth_type",
            "unknown value",
        ),
        (
            "tls_server_config: {cert_file: c, key_file: k, min_version: TLS13, "
            "max_version: TLS12}\n",
            "tls_server_config.min_version",
            "above max_version",
        ),
        (
            "tls_server_config: {cert_file: c, key_file: k, cert: x}\n",
            "tls_server_config.cert",
            "use cert_file",
        ),
        (
            "tls_server_config: {cert_file: 7, key_file: k}\n",
            "tls_server_config.cert_file",
            "string",
        ),
        ("tls_server_config: [a]\n", "tls_server_config", "mapping"),
        (
            "basic_auth_users: {alice: '$2y$03$" + "a" * 53 + "'}\n",
            "basic_auth_users.alice",
            "cost",
        ),
        ("basic_auth_users: {123: x}\n", "basic_auth_users.123", "string"),
        ("http_server_config: {http2: maybe}\n", "http_server_config.http2", "true or false"),
        (
            "http_server_config: {headers: {X-Content-Type-Options: sniff}}\n",
            "http_server_config.headers.X-Content-Type-Options",
            "nosniff",
        ),
        (
            "http_server_config: {headers: {x-frame-options: deny}}\n",
            "http_server_config.headers.x-frame-options",
            "allowed headers",
        ),
        (
            'http_server_config: {headers: {Content-Security-Policy: "a\\nb"}}\n',
            "http_server_config.headers.Content-Security-Policy",
            "control",
        ),
        ("- a list\n", "", "mapping"),
    ],
    ids=[
        "cert-missing",
        "ca-without-client-auth",
        "verify-without-ca",
        "request-client-cert",
        "unknown-client-auth",
        "min-above-max",
        "inline-cert",
        "cert-not-a-string",
        "tls-not-a-mapping",
        "bcrypt-cost-too-low",
        "user-not-a-string",
        "http2-not-a-bool",
        "header-value-not-allowed",
        "header-name-case",
        "header-control-character",
        "top-level-list",
    ],
)
def test_one_problem(text: str, path: str, fragment: str) -> None:
    found = problems(text)
    assert list(found) == [path]
    assert fragment in found[path]


def test_duplicate_keys_are_errors_at_their_path() -> None:
    text = f"""
basic_auth_users:
  alice: '{HASH}'
  alice: '{HASH}'
tls_server_config: {{cert_file: a, key_file: b}}
tls_server_config: {{cert_file: a, key_file: b}}
"""
    found = problems(text)
    assert set(found) == {"basic_auth_users.alice", "tls_server_config"}
    assert found["basic_auth_users.alice"] == "duplicate key (line 4 repeats line 3)"


def test_a_syntax_error_names_its_line() -> None:
    error = str(problems("basic_auth_users:\n  alice: [unclosed\n"))
    assert "not valid YAML at line" in error


def test_the_error_names_the_file_and_every_problem() -> None:
    with pytest.raises(WebConfigError) as caught:
        parse_web_config("a: 1\nb: 2\n", DIR, source="/etc/web/web.yml")
    assert str(caught.value).splitlines()[0] == "invalid web config /etc/web/web.yml:"
    assert len(caught.value.problems) == 2


def test_the_documented_example_is_valid() -> None:
    page = (Path(__file__).parents[2] / "docs" / "security-webconfig.md").read_text()
    example = page.split("```yaml\n", 1)[1].split("```", 1)[0]
    config = parse_web_config(example, DIR)
    assert config.tls is not None and config.tls.client_ca_file == DIR / "client-ca.crt"
    assert set(config.basic_auth_users) == {"prometheus"}
    assert len(config.headers) == 5
