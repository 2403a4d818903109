"""The web-serving flags both servers take: exporter-toolkit's web config and the limits.

`--web.config.file` (TLS, basic auth, response headers; re-read when it changes) and the bounded
server's limits (`--web.header-timeout`, `--web.request-timeout`, durations like `10s`, `500ms`,
`1m` or plain seconds; `--web.max-connections`), read into `webconfig` objects before anything
starts: a bad file or value raises `WebFlagError`, which each CLI turns into exit 2.
"""

from __future__ import annotations

import argparse
import re
from pathlib import Path

from webconfig.live import LiveWebConfig
from webconfig.model import Limits, WebConfigError

_DEFAULT = Limits()


class WebFlagError(ValueError):
    """A web flag a server cannot start with."""


_DURATION = re.compile(r"(\d+(?:\.\d+)?)(ms|s|m)?")
_UNIT = {"ms": 0.001, "s": 1.0, "m": 60.0, None: 1.0}


def parse_timeout(text: str) -> float:
    """`10s`, `500ms`, `1m` or `10` (seconds) -> seconds > 0."""
    found = _DURATION.fullmatch(str(text).strip())
    seconds = float(found.group(1)) * _UNIT[found.group(2)] if found else 0.0
    if seconds <= 0:
        raise WebFlagError(f"expected a duration > 0 like 10s or 500ms, got {text!r}")
    return seconds


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
        header = parse_timeout(args.web_header_timeout)
        request = parse_timeout(args.web_request_timeout)
    except WebFlagError as err:
        raise WebFlagError(f"--web.header-timeout/--web.request-timeout: {err}") from err
    if args.web_max_connections is None or int(args.web_max_connections) < 1:
        raise WebFlagError(f"--web.max-connections: must be >= 1, got {args.web_max_connections}")
    limits = Limits(
        header_timeout=header,
        request_timeout=request,
        max_connections=int(args.web_max_connections),
    )
    if not args.web_config_file:
        return None, limits
    try:
        return LiveWebConfig(Path(args.web_config_file)), limits
    except WebConfigError as err:
        raise WebFlagError(f"--web.config.file: {err}") from err
