"""The clock the emulator's tests move by hand."""

from __future__ import annotations

import pytest


@pytest.fixture
def clock() -> list[float]:
    return [1_000.0]
