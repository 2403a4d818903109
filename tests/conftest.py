"""Shared test fixtures. Every test runs with network access limited to loopback."""

from __future__ import annotations

import ipaddress
import os
import socket
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import settings
from repo_paths import SHARED_DATA

# Hypothesis fails an example that runs longer than its `deadline` (200 ms by default): on a busy
# machine that is the machine, not the code. Property tests judge results, never speed.
settings.register_profile("gpu-reclaim", deadline=None)
settings.load_profile("gpu-reclaim")

_real_connect = socket.socket.connect
_real_connect_ex = socket.socket.connect_ex


def _is_allowed(address: Any) -> bool:
    if isinstance(address, (str, bytes)):  # AF_UNIX path
        return True
    host = address[0]
    if host in ("localhost", ""):
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def _guarded_connect(self: socket.socket, address: Any) -> None:
    if not _is_allowed(address):
        raise RuntimeError(f"test tried to reach {address!r}: only loopback is allowed")
    _real_connect(self, address)


def _guarded_connect_ex(self: socket.socket, address: Any) -> int:
    if not _is_allowed(address):
        raise RuntimeError(f"test tried to reach {address!r}: only loopback is allowed")
    return _real_connect_ex(self, address)


@pytest.fixture(autouse=True)
def _loopback_only(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.setattr(socket.socket, "connect", _guarded_connect)
    monkeypatch.setattr(socket.socket, "connect_ex", _guarded_connect_ex)
    yield


@pytest.fixture(scope="session")
def shared_data() -> Path:
    """The public traces: the CI's local mirror, else the folder `traces fetch` writes."""
    if SHARED_DATA.is_dir():
        return SHARED_DATA
    fetched = _fetched_traces()
    if (fetched / "alibaba-openb" / "openb_pod_list_default.csv").is_file():
        return fetched
    pytest.skip(f"no traces at {SHARED_DATA} or {fetched}: run `gpu-reclaimer traces fetch`")


def _fetched_traces() -> Path:
    from reclaimer.traces.catalog import default_cache_dir  # noqa: PLC0415

    return default_cache_dir(os.environ, Path.home())


@pytest.fixture(scope="session")
def image(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """bin/ of the image's environment: the wheel the Dockerfile builds, runtime deps only."""
    from imagebuild import build_image  # noqa: PLC0415 - only the image tests pay for it

    return build_image(tmp_path_factory.mktemp("image"))
