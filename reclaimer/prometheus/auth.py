"""How the reclaimer authenticates to Prometheus, and how it keeps those secrets out of every text.

Credentials come from files, never from the command line (where `ps` and the Pod spec show
them): a bearer token file (`--prometheus.bearer-token-file`, re-read whenever it changes, since
projected service-account tokens rotate), or a basic-auth file holding `username:password` on its
first line (`--prometheus.basic-auth-file`), plus extra headers (`--prometheus.header
NAME=VALUE`, e.g. `X-Scope-OrgID` for Mimir, Cortex or Thanos tenants), a CA file for a private
CA and, for development only, `--prometheus.insecure-skip-verify`. `user:pass@` in the URL still
works, as Prometheus' own clients allow it.

Every secret the client holds (the URL's password, the token, the basic-auth password, every
extra header's value) is scrubbed from every error message it raises (`Credentials.scrub`), and
URLs are shown redacted (`redact_url`, Go's `url.Redacted`: the password becomes `xxxxx`), so
no log line, plan, Event or `/plan` answer ever carries one.
"""

from __future__ import annotations

import base64
import os
import ssl
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType
from urllib.parse import urlsplit, urlunsplit

REDACTED = "xxxxx"


class CredentialError(ValueError):
    """A credential flag the reclaimer cannot start with (exit 2)."""


def redact_url(url: str) -> str:
    """The URL with its password replaced by `xxxxx`, as Go's `url.URL.Redacted` does."""
    parts = urlsplit(url)
    if parts.password is None:
        return url
    user = parts.username or ""
    host = parts.hostname or ""
    if ":" in host:
        host = f"[{host}]"
    netloc = f"{user}:{REDACTED}@{host}" + (f":{parts.port}" if parts.port else "")
    return urlunsplit(parts._replace(netloc=netloc))


def parse_header(text: str) -> tuple[str, str]:
    """`NAME=VALUE` -> (NAME, VALUE); the name must be a token, the value non-empty."""
    name, sep, value = text.partition("=")
    name = name.strip()
    if not sep or not name or not value or any(c in name for c in ' \t:"(),/;<=>?@[\\]{}'):
        raise CredentialError(f"--prometheus.header: expected NAME=VALUE, got {name or text!r}")
    if name.lower() == "authorization":
        raise CredentialError(
            "--prometheus.header: set Authorization with --prometheus.bearer-token-file or "
            "--prometheus.basic-auth-file, so it stays out of the command line"
        )
    return name, value.strip()


@dataclass
class _WatchedFile:
    """A small file re-read when its modification time or size changes."""

    path: Path
    stamp: tuple[float, int] = (-1.0, -1)
    text: str = ""

    def read(self) -> str:
        try:
            st = os.stat(self.path)
            stamp = (st.st_mtime, st.st_size)
            if stamp != self.stamp:
                self.text, self.stamp = self.path.read_text(encoding="utf-8").strip(), stamp
        except OSError as exc:
            raise CredentialError(f"cannot read {self.path}: {exc.strerror or exc}") from exc
        return self.text


@dataclass
class Credentials:
    """What to send with every request, and what must never be shown."""

    bearer_token_file: Path | None = None
    basic_auth_file: Path | None = None
    headers: Mapping[str, str] = field(default_factory=lambda: MappingProxyType({}))
    ca_file: Path | None = None
    insecure_skip_verify: bool = False
    url_password: str | None = None
    _files: dict[Path, _WatchedFile] = field(default_factory=dict, repr=False)

    def __post_init__(self) -> None:
        if self.bearer_token_file and self.basic_auth_file:
            raise CredentialError(
                "--prometheus.bearer-token-file and --prometheus.basic-auth-file: choose one"
            )
        if self.basic_auth_file and self.url_password is not None:
            raise CredentialError(
                "--prometheus.basic-auth-file and user:pass@ in the URL: choose one"
            )
        for path in (self.bearer_token_file, self.basic_auth_file, self.ca_file):
            if path is not None and not path.is_file():
                raise CredentialError(f"{path}: no such file")
        self.request_headers()  # read once now: a bad file stops the start, not a cycle

    def check(self) -> None:
        """At most one source of the Authorization header."""
        if self.bearer_token_file and self.basic_auth_file:
            raise CredentialError(
                "--prometheus.bearer-token-file and --prometheus.basic-auth-file: choose one"
            )
        if (self.bearer_token_file or self.basic_auth_file) and self.url_password is not None:
            raise CredentialError(
                "credentials in the URL (user:pass@) and an auth file: choose one"
            )

    def _text(self, path: Path) -> str:
        return self._files.setdefault(path, _WatchedFile(path)).read()

    def request_headers(self) -> dict[str, str]:
        """Headers for the next request; token and password files are re-read if they changed."""
        out = dict(self.headers)
        if self.bearer_token_file is not None:
            token = self._text(self.bearer_token_file)
            if not token:
                raise CredentialError(f"{self.bearer_token_file}: the token file is empty")
            out["Authorization"] = f"Bearer {token}"
        if self.basic_auth_file is not None:
            user, password = self._user_password()
            raw = f"{user}:{password}".encode()
            out["Authorization"] = "Basic " + base64.b64encode(raw).decode()
        return out

    def _user_password(self) -> tuple[str, str]:
        assert self.basic_auth_file is not None
        first = self._text(self.basic_auth_file).splitlines()[:1]
        user, sep, password = (first[0] if first else "").partition(":")
        if not sep or not user:
            raise CredentialError(
                f"{self.basic_auth_file}: expected username:password on the first line"
            )
        return user, password

    def secrets(self) -> list[str]:
        found = [v for v in self.headers.values() if v]
        if self.url_password:
            found.append(self.url_password)
        for path in (self.bearer_token_file, self.basic_auth_file):
            if path is not None and path in self._files and self._files[path].text:
                text = self._files[path].text
                found += [text, text.partition(":")[2]] if path == self.basic_auth_file else [text]
        return sorted({s for s in found if len(s) >= 3}, key=len, reverse=True)

    def scrub(self, text: str) -> str:
        """`text` with every secret replaced; URLs in it are expected to be redacted already."""
        for secret in self.secrets():
            text = text.replace(secret, "<redacted>")
        return text

    def ssl_context(self) -> ssl.SSLContext | bool:
        """For aiohttp's connector: a context trusting `ca_file`, False to skip verification."""
        if self.insecure_skip_verify:
            return False
        if self.ca_file is None:
            return True
        return ssl.create_default_context(cafile=str(self.ca_file))
