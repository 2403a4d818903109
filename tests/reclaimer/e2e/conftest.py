"""Fixtures the end-to-end tests share."""

from __future__ import annotations

import time

import pytest


@pytest.fixture(scope="module")
def now() -> float:
    """Wall-clock time once per module: the history and the cluster's timestamps agree on it."""
    return time.time()
