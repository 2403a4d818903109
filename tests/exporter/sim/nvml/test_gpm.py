"""The emulator's GPM: per-instance activity from two samples; an unknown metric answers
NotSupported."""

from __future__ import annotations

import pytest
from exporter_fakes import emulator

from exporter.sim.nvml import library as simnvml
from exporter.sim.nvml.device import SimProcess, h100


def test_gpm_measures_instance_activity(clock: list[float]) -> None:
    gpu = h100(0, mig=True)
    gi = gpu.mig[0].gpu_instance_id  # type: ignore[index,union-attr]
    gpu.processes.append(SimProcess(9, sm=lambda t: 0.25, gpu_instance_id=gi))
    lib = emulator(clock, [gpu])
    parent = lib.nvmlDeviceGetHandleByIndex(0)
    first = lib.nvmlGpmMigSampleGet(parent, gi, lib.nvmlGpmSampleAlloc())
    clock[0] += 20
    second = lib.nvmlGpmMigSampleGet(parent, gi, lib.nvmlGpmSampleAlloc())
    query = simnvml.c_nvmlGpmMetricsGet_t(simnvml.NVML_GPM_METRICS_GET_VERSION, 2, first, second)
    query.metrics[0].metricId = simnvml.NVML_GPM_METRIC_GRAPHICS_UTIL
    query.metrics[1].metricId = 9999
    lib.nvmlGpmMetricsGet(query)
    assert query.metrics[0].nvmlReturn == 0
    assert query.metrics[0].value == pytest.approx(25.0)
    assert query.metrics[1].nvmlReturn == simnvml.NVML_ERROR_NOT_SUPPORTED
