"""Where things are, for every test: the repository, the shared data, the test fixtures."""

from __future__ import annotations

from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
SHARED_DATA = REPO.parent / "shared" / "data"
FIXTURES = REPO / "tests" / "fixtures"
