"""The web config file (exporter-toolkit's format) -> `WebConfig`, or every problem at once.

Pure: `parse_web_config(text, directory)` reads no files; `directory` is the config file's folder,
which relative paths are joined to (as exporter-toolkit does). Unknown keys are errors, and so are
the exporter-toolkit settings this server cannot honour (inline certificates, cipher lists, SAN
allow-lists, rate limits, and the client-auth modes that accept unverified certificates), each with
a message that says why, so an operator never believes a setting is in force when it is not.

Deliberate differences from exporter-toolkit, all towards refusing: a `tls_server_config` that
sets anything must name both cert_file and key_file (exporter-toolkit silently serves plain HTTP
for, e.g., one holding only `min_version`); verifying client certificates needs `client_ca_file`
(Go would fall back to the system's public CAs); TLS 1.0 and 1.1 are refused.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from webconfig.model import (
    ClientAuth,
    Problem,
    TLSServerConfig,
    TLSVersion,
    WebConfig,
    WebConfigError,
)
from webconfig.yaml_tree import join, load_yaml

TOP_KEYS = ("tls_server_config", "basic_auth_users", "http_server_config")
TLS_KEYS = (
    "cert_file",
    "key_file",
    "client_auth_type",
    "client_ca_file",
    "min_version",
    "max_version",
)
HTTP_KEYS = ("headers", "http2")

_NOT_SUPPORTED = "is an exporter-toolkit setting this server does not support"
UNSUPPORTED: Mapping[str, str] = {
    "rate_limit": _NOT_SUPPORTED,
    "tls_server_config.cert": f"{_NOT_SUPPORTED}; use cert_file",
    "tls_server_config.key": f"{_NOT_SUPPORTED}; use key_file",
    "tls_server_config.client_ca": f"{_NOT_SUPPORTED}; use client_ca_file",
    "tls_server_config.client_allowed_sans": _NOT_SUPPORTED,
    "tls_server_config.cipher_suites": f"{_NOT_SUPPORTED} (OpenSSL's defaults apply)",
    "tls_server_config.curve_preferences": f"{_NOT_SUPPORTED} (OpenSSL's defaults apply)",
    "tls_server_config.prefer_server_cipher_suites": _NOT_SUPPORTED,
}

# Client-auth modes Go offers that accept a certificate without verifying it against a CA; Python's
# ssl module verifies whatever it requests, so they cannot be reproduced, only refused.
_UNVERIFIED_CLIENT_AUTH = ("RequestClientCert", "RequireAnyClientCert", "RequireClientCert")

# exporter-toolkit's allow-list of response headers, with the values it accepts (None: any).
ALLOWED_HEADERS: Mapping[str, tuple[str, ...] | None] = {
    "Strict-Transport-Security": None,
    "X-Content-Type-Options": ("nosniff",),
    "X-Frame-Options": ("deny", "sameorigin"),
    "X-XSS-Protection": None,
    "Content-Security-Policy": None,
}

# $2a$/$2b$/$2y$ (htpasswd writes $2y$), a two-digit cost, then 22 salt and 31 hash characters.
_BCRYPT = re.compile(r"\$2[aby]\$(\d\d)\$[./A-Za-z0-9]{53}")
_HEADER_VALUE = re.compile(r"[\t\x20-\x7e\x80-\U0010ffff]*")


def parse_web_config(text: str, directory: Path, source: str = "<text>") -> WebConfig:
    """The file's text -> `WebConfig`; raises `WebConfigError` listing every problem.
    `source` names the file in the error."""
    document, problems = load_yaml(text)
    config = _config(document, directory, problems) if not _syntax_failed(problems) else None
    if problems or config is None:
        raise WebConfigError(source, tuple(problems))
    return config


def _syntax_failed(problems: list[Problem]) -> bool:
    return any(not problem.path for problem in problems)


def _config(document: Any, directory: Path, problems: list[Problem]) -> WebConfig | None:
    if document is None:
        return WebConfig()  # an empty file: plain HTTP, no auth (as exporter-toolkit)
    top = _mapping(document, "", problems)
    if top is None:
        return None
    _unknown_keys(top, "", TOP_KEYS, problems)
    tls = _tls(top.get("tls_server_config"), directory, problems)
    users = _users(top.get("basic_auth_users"), problems)
    headers = _http(top.get("http_server_config"), problems)
    return WebConfig(tls=tls, basic_auth_users=users, headers=headers)


def _mapping(value: Any, path: str, problems: list[Problem]) -> dict[Any, Any] | None:
    if value is None:
        return {}
    if not isinstance(value, dict):
        problems.append(Problem(path, f"must be a mapping, got {_kind(value)}"))
        return None
    return value


def _kind(value: Any) -> str:
    return "a list" if isinstance(value, list) else f"{type(value).__name__} {value!r:.40}"


def _unknown_keys(
    mapping: dict[Any, Any], path: str, known: tuple[str, ...], problems: list[Problem]
) -> None:
    for key in mapping:
        where = join(path, key)
        if key in known:
            continue
        reason = UNSUPPORTED.get(where)
        problems.append(
            Problem(where, reason or f"unknown key; expected one of {', '.join(known)}")
        )


def _string(value: Any, path: str, problems: list[Problem]) -> str | None:
    if value is None or value == "":
        return None
    if not isinstance(value, str):
        problems.append(Problem(path, f"must be a string, got {_kind(value)}"))
        return None
    return value


def _tls(value: Any, directory: Path, problems: list[Problem]) -> TLSServerConfig | None:
    path = "tls_server_config"
    section = _mapping(value, path, problems)
    if not section:
        return None
    _unknown_keys(section, path, TLS_KEYS, problems)
    values = {key: _string(section.get(key), join(path, key), problems) for key in TLS_KEYS}
    for name in ("cert_file", "key_file"):
        if values[name] is None and join(path, name) not in {p.path for p in problems}:
            problems.append(Problem(join(path, name), "is required when TLS is configured"))
    auth = _client_auth(values["client_auth_type"], join(path, "client_auth_type"), problems)
    ca = values["client_ca_file"]
    if auth is ClientAuth.NO_CLIENT_CERT and ca is not None:
        problems.append(
            Problem(join(path, "client_ca_file"), "is set but client_auth_type is NoClientCert")
        )
    if auth not in (None, ClientAuth.NO_CLIENT_CERT) and ca is None:
        problems.append(Problem(join(path, "client_ca_file"), f"is required by {auth}"))
    low = _version(values["min_version"], join(path, "min_version"), TLSVersion.TLS12, problems)
    high = _version(values["max_version"], join(path, "max_version"), TLSVersion.TLS13, problems)
    if low and high and low > high:
        problems.append(Problem(join(path, "min_version"), f"{low} is above max_version {high}"))
    cert, key = values["cert_file"], values["key_file"]
    if cert is None or key is None or auth is None or low is None or high is None:
        return None
    return TLSServerConfig(
        cert_file=directory / cert,  # an absolute value replaces the directory
        key_file=directory / key,
        client_auth_type=auth,
        client_ca_file=directory / ca if ca is not None else None,
        min_version=low,
        max_version=high,
    )


def _client_auth(text: str | None, path: str, problems: list[Problem]) -> ClientAuth | None:
    if text is None:
        return ClientAuth.NO_CLIENT_CERT
    if text in _UNVERIFIED_CLIENT_AUTH:
        problems.append(
            Problem(
                path,
                f"{text} accepts client certificates without verifying them against a CA, which "
                "Python's ssl module cannot do; use RequireAndVerifyClientCert (or "
                "VerifyClientCertIfGiven) with client_ca_file",
            )
        )
        return None
    try:
        return ClientAuth(text)
    except ValueError:
        known = ", ".join(auth.value for auth in ClientAuth)
        problems.append(Problem(path, f"unknown value {text!r:.60}; expected one of {known}"))
        return None


def _version(
    text: str | None, path: str, default: TLSVersion, problems: list[Problem]
) -> TLSVersion | None:
    if text is None:
        return default
    if text in ("TLS10", "TLS11"):
        problems.append(Problem(path, f"{text} is not supported: TLS 1.0 and 1.1 are deprecated"))
        return None
    try:
        return TLSVersion(text)
    except ValueError:
        problems.append(Problem(path, f"unknown value {text!r:.60}; expected TLS12 or TLS13"))
        return None


def _users(value: Any, problems: list[Problem]) -> dict[str, str]:
    path = "basic_auth_users"
    section = _mapping(value, path, problems) or {}
    users: dict[str, str] = {}
    for user, hashed in section.items():
        where = join(path, user)
        if not isinstance(user, str) or not user:
            problems.append(Problem(where, "a user name must be a non-empty string"))
            continue
        if ":" in user:
            problems.append(Problem(where, "a user name cannot contain ':' (RFC 7617)"))
            continue
        match = _BCRYPT.fullmatch(hashed) if isinstance(hashed, str) else None
        if match is None:
            # Never echo the value: it may be a plain-text password pasted by mistake.
            problems.append(Problem(where, "must be a bcrypt hash ($2y$10$... as htpasswd -B)"))
        elif not 4 <= int(match.group(1)) <= 31:
            problems.append(Problem(where, f"bcrypt cost {match.group(1)} is outside 4..31"))
        else:
            users[user] = hashed
    return users


def _http(value: Any, problems: list[Problem]) -> dict[str, str]:
    path = "http_server_config"
    section = _mapping(value, path, problems) or {}
    _unknown_keys(section, path, HTTP_KEYS, problems)
    http2 = section.get("http2")
    if http2 is not None and not isinstance(http2, bool):
        problems.append(Problem(join(path, "http2"), f"must be true or false, got {_kind(http2)}"))
    path = join(path, "headers")
    headers: dict[str, str] = {}
    for name, text in (_mapping(section.get("headers"), path, problems) or {}).items():
        where = join(path, name)
        allowed = ALLOWED_HEADERS.get(name, ()) if isinstance(name, str) else ()
        if allowed == ():
            known = ", ".join(ALLOWED_HEADERS)
            problems.append(Problem(where, f"cannot be configured; allowed headers: {known}"))
            continue
        header = _string(text, where, problems)
        if header is None:
            continue  # blank: unset, as exporter-toolkit documents
        if not _HEADER_VALUE.fullmatch(header):
            problems.append(Problem(where, "contains control characters"))
        elif allowed is not None and header not in allowed:
            problems.append(Problem(where, f"must be one of {', '.join(allowed)}"))
        else:
            headers[name] = header
    return headers
