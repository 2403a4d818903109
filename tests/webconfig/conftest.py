"""Fixtures for the web config tests: a throwaway PKI (trustme), config files, a stepping clock."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
import trustme
from webfixtures import Pki, make_pki


@pytest.fixture(scope="session")
def _session_pki(tmp_path_factory: pytest.TempPathFactory) -> Pki:
    return make_pki(tmp_path_factory.mktemp("pki"))


@pytest.fixture
def pki(_session_pki: Pki, tmp_path: Path) -> Iterator[Pki]:
    """The session's CA and certificates, copied into this test's directory (tests rewrite them)."""
    yield _session_pki.copy_to(tmp_path)


@pytest.fixture(scope="session")
def other_ca() -> trustme.CA:
    return trustme.CA()
