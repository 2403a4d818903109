"""Building the server's SSLContext: every unusable file is named at the setting that names it."""

from __future__ import annotations

import ssl
from pathlib import Path

import pytest
from cryptography.hazmat.primitives import serialization
from webfixtures import Pki

from webconfig.model import ClientAuth, TLSServerConfig, TLSVersion, WebConfigError
from webconfig.tls import build_ssl_context


def problems(tls: TLSServerConfig) -> dict[str, str]:
    with pytest.raises(WebConfigError) as caught:
        build_ssl_context(tls)
    return {problem.path: problem.message for problem in caught.value.problems}


def test_a_good_context_has_the_configured_versions_and_client_auth(pki: Pki) -> None:
    context = build_ssl_context(
        TLSServerConfig(
            pki.cert,
            pki.key,
            client_auth_type=ClientAuth.REQUIRE_AND_VERIFY_CLIENT_CERT,
            client_ca_file=pki.client_ca_file,
            min_version=TLSVersion.TLS13,
        )
    )
    assert context.minimum_version is ssl.TLSVersion.TLSv1_3
    assert context.maximum_version is ssl.TLSVersion.TLSv1_3
    assert context.verify_mode is ssl.CERT_REQUIRED
    assert context.options & ssl.OP_NO_RENEGOTIATION


def test_missing_files_are_all_named(pki: Pki, tmp_path: Path) -> None:
    found = problems(
        TLSServerConfig(
            tmp_path / "none.crt",
            tmp_path / "none.key",
            client_auth_type=ClientAuth.VERIFY_CLIENT_CERT_IF_GIVEN,
            client_ca_file=tmp_path / "none-ca.crt",
        )
    )
    assert set(found) == {
        "tls_server_config.cert_file",
        "tls_server_config.key_file",
        "tls_server_config.client_ca_file",
    }
    assert all("cannot read" in message for message in found.values())


def test_files_of_the_wrong_kind(pki: Pki) -> None:
    found = problems(TLSServerConfig(pki.key, pki.cert))  # swapped
    assert "no PEM certificate" in found["tls_server_config.cert_file"]
    assert "no PEM private key" in found["tls_server_config.key_file"]


def test_a_key_that_does_not_match_the_certificate(pki: Pki, tmp_path: Path) -> None:
    other_key = tmp_path / "other.key"
    pki.ca.issue_cert("other").private_key_pem.write_to_path(other_key)
    assert problems(TLSServerConfig(pki.cert, other_key)) == {
        "tls_server_config.key_file": "does not match cert_file"
    }


def test_an_encrypted_key_is_refused_instead_of_prompting(pki: Pki, tmp_path: Path) -> None:
    key = serialization.load_pem_private_key(pki.key.read_bytes(), None)
    encrypted = tmp_path / "encrypted.key"
    encrypted.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.BestAvailableEncryption(b"passphrase"),
        )
    )
    found = problems(TLSServerConfig(pki.cert, encrypted))
    assert "encrypted" in found["tls_server_config.key_file"]


def test_a_ca_file_without_certificates(pki: Pki, tmp_path: Path) -> None:
    junk = tmp_path / "ca.crt"
    junk.write_text("-----BEGIN CERTIFICATE-----\nnot base64\n-----END CERTIFICATE-----\n")
    found = problems(
        TLSServerConfig(
            pki.cert,
            pki.key,
            client_auth_type=ClientAuth.REQUIRE_AND_VERIFY_CLIENT_CERT,
            client_ca_file=junk,
        )
    )
    assert "cannot load the CA" in found["tls_server_config.client_ca_file"]
