"""`--kubernetes.*` flags: validation (all problems at once) and which API server they choose."""

from __future__ import annotations

from pathlib import Path

import pytest

from exporter.cli import api_endpoint, build_parser, main
from exporter.config import ConfigError, load_config
from exporter.node.apiserver import IN_CLUSTER_DIR, ApiEndpoint

IN_CLUSTER = {"KUBERNETES_SERVICE_HOST": "10.96.0.1", "KUBERNETES_SERVICE_PORT": "443"}


def _flags(argv: str) -> dict[str, str | bool | None]:
    return vars(build_parser().parse_args(argv.split()))


@pytest.mark.parametrize(
    ("argv", "env", "expected"),
    [
        pytest.param("", {}, None, id="outside-a-cluster"),
        pytest.param(
            "",
            IN_CLUSTER,
            ApiEndpoint(
                "https://10.96.0.1:443", IN_CLUSTER_DIR / "token", IN_CLUSTER_DIR / "ca.crt"
            ),
            id="in-cluster",
        ),
        pytest.param(
            "--kubernetes.api-url https://api.example:6443/"
            " --kubernetes.token-file /t --kubernetes.ca-file /ca.pem",
            IN_CLUSTER,
            ApiEndpoint("https://api.example:6443", Path("/t"), Path("/ca.pem")),
            id="explicit-url-wins",
        ),
        pytest.param(
            "--kubernetes.api-url https://127.0.0.1:6443 --kubernetes.insecure-skip-tls-verify",
            {},
            ApiEndpoint("https://127.0.0.1:6443", insecure_skip_tls_verify=True),
            id="insecure-dev",
        ),
        pytest.param(
            "--kubernetes.api-url http://127.0.0.1:8001",
            {},
            ApiEndpoint("http://127.0.0.1:8001"),
            id="kubectl-proxy",
        ),
    ],
)
def test_the_endpoint_chosen(argv: str, env: dict[str, str], expected: ApiEndpoint | None) -> None:
    assert api_endpoint(load_config(_flags(argv), {}, "h"), env) == expected


@pytest.mark.parametrize(
    ("argv", "errors"),
    [
        pytest.param(
            "--kubernetes.api-url ftp://x --kubernetes.ca-file /ca"
            " --kubernetes.insecure-skip-tls-verify",
            [
                "--kubernetes.api-url=ftp://x: must be an http:// or https:// URL",
                "--kubernetes.insecure-skip-tls-verify contradicts --kubernetes.ca-file",
            ],
            id="bad-scheme-and-contradiction",
        ),
        pytest.param(
            "--kubernetes.token-file /t --kubernetes.ca-file /ca"
            " --kubernetes.insecure-skip-tls-verify",
            [
                "--kubernetes.token-file is only used with --kubernetes.api-url",
                "--kubernetes.ca-file is only used with --kubernetes.api-url",
                "--kubernetes.insecure-skip-tls-verify is only used with --kubernetes.api-url",
                "--kubernetes.insecure-skip-tls-verify contradicts --kubernetes.ca-file",
            ],
            id="options-without-url",
        ),
        pytest.param(
            "--kubernetes.api-url http://h:1 --kubernetes.ca-file /ca",
            ["--kubernetes.ca-file is only used with an https:// --kubernetes.api-url"],
            id="ca-for-plain-http",
        ),
        pytest.param(
            "--kubernetes.api-url https://h:99999",
            ["--kubernetes.api-url=https://h:99999: Port out of range 0-65535"],
            id="bad-port",
        ),
        pytest.param(
            "--kubernetes.api-url https://u:p@h/?watch=1 --collect-interval 0",
            [
                "--collect-interval=0: must be a positive number",
                "--kubernetes.api-url=https://u:p@h/?watch=1: must not carry a query",
            ],
            id="query-and-credentials-and-another-flag",
        ),
    ],
)
def test_every_invalid_kubernetes_flag_is_reported_at_once(argv: str, errors: list[str]) -> None:
    with pytest.raises(ConfigError) as err:
        load_config(_flags(argv), {}, "h")
    assert len(err.value.errors) == len(errors)
    for got, want in zip(err.value.errors, errors, strict=True):
        assert got.startswith(want)


def test_the_cli_answers_bad_kubernetes_flags_with_exit_2(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(["--backend", "sim", "--kubernetes.api-url", "localhost:6443"]) == 2
    assert "--kubernetes.api-url=localhost:6443: must be an http" in capsys.readouterr().err
