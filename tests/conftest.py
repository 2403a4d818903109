"""Shared test fixtures. Every test runs with network access limited to loopback."""

from __future__ import annotations

import ipaddress
import os
import socket
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import shared_traces
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


# Every test that reads the public traces runs on the copy found and on a cut of it holding the
# GenTD26 rows of this many pods: CI's copy holds a subset of the publisher's pods and a user's
# fetch holds them all, so no expectation may rest on which pods one copy holds.
CUT_PODS = 50


@pytest.fixture(scope="session", params=["found", f"{CUT_PODS}-pod-cut"])
def shared_data(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The public traces (`shared_traces.locate`: CI's mirror, else the folder `traces fetch`
    writes), then a cut of them. Missing, they skip the test, or fail it under
    GPU_RECLAIM_REQUIRE_TRACES=1 (as CI runs)."""
    try:
        found = shared_traces.locate(SHARED_DATA, os.environ, Path.home())
    except shared_traces.TracesMissing as missing:
        if shared_traces.required(os.environ):
            pytest.fail(f"{missing} ({shared_traces.REQUIRE}=1)", pytrace=False)
        pytest.skip(str(missing))
    if request.param == "found":
        return found
    return shared_traces.write_cut(found, tmp_path_factory.mktemp("traces-cut"), CUT_PODS)


@pytest.fixture(scope="session")
def image(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """bin/ of the image's environment: the wheel the Dockerfile builds, runtime deps only."""
    from imagebuild import build_image  # noqa: PLC0415 - only the image tests pay for it

    return build_image(tmp_path_factory.mktemp("image"))
