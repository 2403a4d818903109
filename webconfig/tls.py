"""`TLSServerConfig` -> a server `ssl.SSLContext`, reading the certificate, key and CA files.

This is the only module that reads the files a web config names. Every failure becomes a
`Problem` at the YAML path of the setting that names the file, so an operator sees
"tls_server_config.key_file: does not match cert_file", not an OpenSSL error code. An encrypted
private key is refused outright: OpenSSL would otherwise prompt on the terminal for a passphrase and
hang a server that has no terminal.
"""

from __future__ import annotations

import ssl
from pathlib import Path

from webconfig.model import ClientAuth, Problem, TLSServerConfig, TLSVersion, WebConfigError

_VERSIONS = {TLSVersion.TLS12: ssl.TLSVersion.TLSv1_2, TLSVersion.TLS13: ssl.TLSVersion.TLSv1_3}
_VERIFY = {
    ClientAuth.NO_CLIENT_CERT: ssl.CERT_NONE,
    ClientAuth.VERIFY_CLIENT_CERT_IF_GIVEN: ssl.CERT_OPTIONAL,
    ClientAuth.REQUIRE_AND_VERIFY_CLIENT_CERT: ssl.CERT_REQUIRED,
}
_PATH = "tls_server_config"


class _EncryptedKey(Exception):
    pass


def _refuse_passphrase() -> bytes:
    raise _EncryptedKey


def _readable(path: Path, setting: str, marker: bytes, what: str) -> Problem | None:
    try:
        content = path.read_bytes()
    except OSError as exc:
        return Problem(f"{_PATH}.{setting}", f"cannot read {path}: {exc.strerror or exc}")
    if marker not in content:
        return Problem(f"{_PATH}.{setting}", f"{path} holds no PEM {what}")
    return None


def build_ssl_context(tls: TLSServerConfig, source: str = "<web config>") -> ssl.SSLContext:
    """A server context for `tls`; raises `WebConfigError` naming each file that is unusable."""
    checks = [
        _readable(tls.cert_file, "cert_file", b"-----BEGIN CERTIFICATE-----", "certificate"),
        _readable(tls.key_file, "key_file", b"PRIVATE KEY-----", "private key"),
    ]
    if tls.client_ca_file is not None:
        checks.append(
            _readable(tls.client_ca_file, "client_ca_file", b"-----BEGIN CERTIFICATE-----", "CA")
        )
    problems = [problem for problem in checks if problem is not None]
    if problems:
        raise WebConfigError(source, tuple(problems))

    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.minimum_version = _VERSIONS[tls.min_version]
    context.maximum_version = _VERSIONS[tls.max_version]
    # Client-initiated TLS 1.2 renegotiation costs the server a handshake per request: refuse it.
    context.options |= ssl.OP_NO_RENEGOTIATION
    try:
        context.load_cert_chain(tls.cert_file, tls.key_file, password=_refuse_passphrase)
    except _EncryptedKey:
        problems.append(Problem(f"{_PATH}.key_file", "is encrypted; give an unencrypted key"))
    except ssl.SSLError as exc:
        if exc.reason == "KEY_VALUES_MISMATCH":
            problems.append(Problem(f"{_PATH}.key_file", "does not match cert_file"))
        else:
            problems.append(
                Problem(f"{_PATH}.cert_file", f"cannot load the certificate and key: {exc}")
            )
    context.verify_mode = _VERIFY[tls.client_auth_type]
    if tls.client_ca_file is not None:
        try:
            context.load_verify_locations(cafile=tls.client_ca_file)
        except ssl.SSLError as exc:
            problems.append(Problem(f"{_PATH}.client_ca_file", f"cannot load the CA: {exc}"))
    if problems:
        raise WebConfigError(source, tuple(problems))
    return context
