"""Both readings of nvml.h's process utilization, for tests that read it through the emulator."""

from __future__ import annotations

import pytest

from exporter.sim.nvml.sampling import ProcessRows


@pytest.fixture(params=list(ProcessRows), ids=str)
def process_rows(request: pytest.FixtureRequest) -> ProcessRows:
    """How the emulated driver answers `nvmlDeviceGetProcessUtilization`: one averaged row per
    process, or one row per process per busy sample period (`exporter.sim.nvml.sampling`)."""
    rows: ProcessRows = request.param
    return rows
