"""The Prometheus flags every command that reads Prometheus shares: its URL and credentials.

Written once here and used by `run` and `export-history`, so both take the same
`--prometheus.*` credential flags (`reclaimer.prometheus.auth` says what each one does) and
check them the same way before anything is contacted.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from urllib.parse import urlsplit

from reclaimer.prometheus.auth import Credentials, parse_header


def add_prometheus_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--prometheus-url", required=True, help="e.g. http://prometheus:9090")
    p.add_argument(
        "--prometheus.bearer-token-file",
        dest="prom_token_file",
        metavar="FILE",
        help="send 'Authorization: Bearer <file content>' (re-read when it changes)",
    )
    p.add_argument(
        "--prometheus.basic-auth-file",
        dest="prom_basic_auth_file",
        metavar="FILE",
        help="basic auth from a file holding username:password on its first line",
    )
    p.add_argument("--prometheus.ca-file", dest="prom_ca_file", metavar="FILE")
    p.add_argument(
        "--prometheus.insecure-skip-verify",
        dest="prom_insecure",
        action="store_true",
        help="do not verify Prometheus' TLS certificate (development only)",
    )
    p.add_argument(
        "--prometheus.header",
        dest="prom_headers",
        metavar="NAME=VALUE",
        action="append",
        default=[],
        help="extra request header, repeatable (e.g. X-Scope-OrgID=tenant-a)",
    )


def prometheus_credentials(args: argparse.Namespace) -> Credentials:
    """The credential flags, checked (files readable, one auth kind) before start; raises
    `reclaimer.prometheus.auth.CredentialError` (a usage error) when they are not usable."""
    return Credentials(
        bearer_token_file=_path(args.prom_token_file),
        basic_auth_file=_path(args.prom_basic_auth_file),
        headers=dict(parse_header(h) for h in args.prom_headers),
        ca_file=_path(args.prom_ca_file),
        insecure_skip_verify=args.prom_insecure,
        url_password=urlsplit(args.prometheus_url).password,
    )


def _path(value: str | None) -> Path | None:
    return Path(value) if value else None
