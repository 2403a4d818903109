"""The web config as data: what a `--web.config.file` says, and the limits of the bounded server.

`WebConfig` mirrors exporter-toolkit's file (`tls_server_config`, `basic_auth_users`,
`http_server_config.headers`) after validation: paths are absolute, enums are enums, and a
`WebConfig` that exists is one the server can apply. `Limits` are not in the file (exporter-toolkit
has no such settings); the servers take them from flags. Everything here is frozen.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from pathlib import Path
from types import MappingProxyType


class ClientAuth(StrEnum):
    """The `client_auth_type` values this server can enforce (exporter-toolkit's names)."""

    NO_CLIENT_CERT = "NoClientCert"
    VERIFY_CLIENT_CERT_IF_GIVEN = "VerifyClientCertIfGiven"
    REQUIRE_AND_VERIFY_CLIENT_CERT = "RequireAndVerifyClientCert"


class TLSVersion(StrEnum):
    TLS12 = "TLS12"
    TLS13 = "TLS13"


@dataclass(frozen=True)
class TLSServerConfig:
    cert_file: Path
    key_file: Path
    client_auth_type: ClientAuth = ClientAuth.NO_CLIENT_CERT
    client_ca_file: Path | None = None
    min_version: TLSVersion = TLSVersion.TLS12
    max_version: TLSVersion = TLSVersion.TLS13

    def files(self) -> tuple[Path, ...]:
        """The files whose contents the TLS context is built from (watched for rotation)."""
        named = (self.cert_file, self.key_file, self.client_ca_file)
        return tuple(path for path in named if path is not None)


def _frozen_map(items: Mapping[str, str] | None = None) -> Mapping[str, str]:
    return MappingProxyType(dict(items or {}))


@dataclass(frozen=True)
class WebConfig:
    """A validated web config. `tls` None: plain HTTP. No users: no basic auth."""

    tls: TLSServerConfig | None = None
    basic_auth_users: Mapping[str, str] = field(default_factory=_frozen_map)  # user -> bcrypt hash
    headers: Mapping[str, str] = field(default_factory=_frozen_map)  # added to every response

    def __post_init__(self) -> None:
        # Callers may hand in plain dicts; freeze them so a shared config cannot change under us.
        object.__setattr__(self, "basic_auth_users", _frozen_map(self.basic_auth_users))
        object.__setattr__(self, "headers", _frozen_map(self.headers))

    @property
    def auth_required(self) -> bool:
        return bool(self.basic_auth_users)


@dataclass(frozen=True)
class Problem:
    """One thing wrong with a web config file, at a dotted YAML path ("" = the whole file)."""

    path: str
    message: str

    def __str__(self) -> str:
        return f"{self.path}: {self.message}" if self.path else self.message


class WebConfigError(Exception):
    """A web config that cannot be applied; `problems` lists every reason at once."""

    def __init__(self, source: str, problems: tuple[Problem, ...]) -> None:
        self.source = source
        self.problems = problems
        lines = "\n".join(f"  {problem}" for problem in problems)
        super().__init__(f"invalid web config {source}:\n{lines}")


@dataclass(frozen=True)
class Limits:
    """How much a client may take from the server before it has proven itself a real request.

    header_timeout: seconds from accept until the request head (request line and headers) is
      complete; the TLS handshake counts against the same budget.
    request_timeout: seconds from a complete head until the connection is closed, whatever it
      is doing (a slow body, a slow handler, a client that never reads its response).
    max_connections: connections held at once, handshaking, reading a head or being served.
    max_header_bytes: the request head's size (request line and headers together).
    max_header_lines: header fields in one request.
    """

    header_timeout: float = 10.0
    request_timeout: float = 30.0
    max_connections: int = 128
    max_header_bytes: int = 16 * 1024
    max_header_lines: int = 100

    def __post_init__(self) -> None:
        wrong = [
            f"{name} must be > 0, got {getattr(self, name)}"
            for name in ("header_timeout", "request_timeout", "max_connections")
            if not getattr(self, name) > 0
        ]
        if self.max_header_bytes < 1024:
            wrong.append(f"max_header_bytes must be >= 1024, got {self.max_header_bytes}")
        if self.max_header_lines < 1:
            wrong.append(f"max_header_lines must be >= 1, got {self.max_header_lines}")
        if wrong:
            raise ValueError("; ".join(wrong))
