"""The web-serving flags of `gpu-reclaimer run`: exporter-toolkit's web config and the limits.

`--web.config.file` (TLS, basic auth, response headers; re-read when it changes) and the bounded
server's limits (`--web.header-timeout`, `--web.request-timeout`, `--web.max-connections`), read
into `webconfig` objects before anything starts: a bad file or value is a usage error (exit 2).
"""

from __future__ import annotations

import argparse
from pathlib import Path

from reclaimer.quantities import parse_duration
from webconfig.live import LiveWebConfig
from webconfig.model import Limits, WebConfigError

_DEFAULT = Limits()


class WebFlagError(ValueError):
    """A web flag the reclaimer cannot start with."""


def add_web_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--web.config.file",
        dest="web_config_file",
        metavar="FILE",
        help="exporter-toolkit web config: TLS, basic auth, headers (re-read when it changes)",
    )
    p.add_argument(
        "--web.header-timeout",
        dest="web_header_timeout",
        default=f"{_DEFAULT.header_timeout:g}s",
        help="close a connection that has not sent its request head within this",
    )
    p.add_argument(
        "--web.request-timeout",
        dest="web_request_timeout",
        default=f"{_DEFAULT.request_timeout:g}s",
        help="close a connection whose request has not been answered within this",
    )
    p.add_argument(
        "--web.max-connections",
        dest="web_max_connections",
        type=int,
        default=_DEFAULT.max_connections,
        help="connections served at once; the oldest idle one makes room",
    )


def web_settings(args: argparse.Namespace) -> tuple[LiveWebConfig | None, Limits]:
    """The web config (None: plain HTTP, no auth) and the limits; `WebFlagError` when bad."""
    try:
        header = parse_duration(args.web_header_timeout)
        request = parse_duration(args.web_request_timeout)
    except ValueError as err:
        raise WebFlagError(f"--web.header-timeout/--web.request-timeout: {err}") from err
    if header <= 0 or request <= 0 or args.web_max_connections < 1:
        raise WebFlagError("web timeouts must be > 0 and --web.max-connections >= 1")
    limits = Limits(
        header_timeout=header, request_timeout=request, max_connections=args.web_max_connections
    )
    if not args.web_config_file:
        return None, limits
    try:
        return LiveWebConfig(Path(args.web_config_file)), limits
    except WebConfigError as err:
        raise WebFlagError(f"--web.config.file: {err}") from err
