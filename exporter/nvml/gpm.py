"""GPM activity (DCGM_FI_PROF_*) of GPUs and MIG instances, through an injected NVML library.

GPM (Hopper and newer) measures over an interval between two samples: each sweep takes one
sample per GPU (`nvmlGpmSampleGet`) or per MIG instance (`nvmlGpmMigSampleGet` on the parent
with the GPU instance id), and `nvmlGpmMetricsGet` turns it and the previous sweep's sample into
activity ratios. The first sweep therefore reports nothing. Samples are freed once used.
Support is queried once per GPU (per UUID and MIG mode: the source's device key); unsupported
GPUs are never asked again until that key changes.
"""

from __future__ import annotations

import contextlib
from typing import Any

from exporter.nvml.calls import DeviceCalls
from exporter.nvml.readings import NvmlCollector, family

_GPM_METRICS = (1, 5, 10)  # NVML_GPM_METRIC_GRAPHICS_UTIL, _ANY_TENSOR_UTIL, _DRAM_BW_UTIL
GPM_FAMILIES = (
    family("DCGM_FI_PROF_GR_ENGINE_ACTIVE"),
    family("DCGM_FI_PROF_PIPE_TENSOR_ACTIVE"),
    family("DCGM_FI_PROF_DRAM_ACTIVE"),
)


class GpmReader:
    """Holds each device's previous GPM sample between sweeps."""

    def __init__(self) -> None:
        self._previous: dict[object, Any] = {}
        self._supported: dict[object, bool] = {}

    def close(self, lib: Any) -> None:
        for sample in self._previous.values():
            with contextlib.suppress(Exception):
                lib.nvmlGpmSampleFree(sample)
        self._previous.clear()

    def read(
        self, calls: DeviceCalls, gpu_key: object, parent: Any, gi: int | None
    ) -> dict[str, float]:
        """GPM activity ratios of a GPU (gi None) or one MIG instance, since the last sweep;
        `gpu_key` is the GPU's device key (the parent's, for an instance)."""
        if gpu_key not in self._supported:
            support = calls.call(NvmlCollector.PROFILING, "nvmlGpmQueryDeviceSupport", parent)
            if not support.ok:
                return {}
            self._supported[gpu_key] = bool(int(support.value.isSupportedDevice))
        if not self._supported[gpu_key]:
            return {}
        alloc = calls.call(NvmlCollector.PROFILING, "nvmlGpmSampleAlloc")
        if not alloc.ok:
            return {}
        if gi is None:
            got = calls.call(NvmlCollector.PROFILING, "nvmlGpmSampleGet", parent, alloc.value)
        else:
            got = calls.call(
                NvmlCollector.PROFILING, "nvmlGpmMigSampleGet", parent, gi, alloc.value
            )
        previous = self._previous.pop(calls.key, None)
        if not got.ok:
            if previous is not None:
                calls.call(NvmlCollector.PROFILING, "nvmlGpmSampleFree", previous)
            calls.call(NvmlCollector.PROFILING, "nvmlGpmSampleFree", alloc.value)
            return {}
        self._previous[calls.key] = alloc.value
        if previous is None:
            return {}
        return self._metrics(calls, previous, alloc.value)

    def _metrics(self, calls: DeviceCalls, first: Any, second: Any) -> dict[str, float]:
        lib = calls.lib
        query = lib.c_nvmlGpmMetricsGet_t()
        query.version = lib.NVML_GPM_METRICS_GET_VERSION
        query.numMetrics = len(_GPM_METRICS)
        query.sample1, query.sample2 = first, second
        for i, metric in enumerate(_GPM_METRICS):
            query.metrics[i].metricId = metric
        result = calls.call(NvmlCollector.PROFILING, "nvmlGpmMetricsGet", query)
        calls.call(NvmlCollector.PROFILING, "nvmlGpmSampleFree", first)
        if not result.ok:
            return {}
        return {
            fam: float(m.value) / 100.0
            for fam, m in zip(GPM_FAMILIES, result.value.metrics, strict=False)
            if int(m.nvmlReturn) == 0
        }
