"""The emulator's GPM calls: per-GPU and per-MIG-instance activity from cumulative counters.

NVML's GPM (Hopper and newer) works on pairs of samples: `nvmlGpmSampleGet` /
`nvmlGpmMigSampleGet` snapshot a GPU's (or one GPU instance's) counters, and `nvmlGpmMetricsGet`
turns two snapshots into rates over the time between them. The emulator's counters are the
integrals of activity that `SimGpu.advance` accumulates; each metric sets its own `nvmlReturn`.
GPM arrived with NVML 12.0 (R525, per the nvml.h history in NVIDIA/go-nvml): older drivers lack
the functions (FunctionNotFound).
"""

from __future__ import annotations

from exporter.sim.nvml.api import Handle, SimNvmlCalls
from exporter.sim.nvml.errors import (
    NVML_ERROR_INVALID_ARGUMENT,
    NVML_ERROR_NOT_SUPPORTED,
    NVMLError_InvalidArgument,
    NVMLError_NotSupported,
)
from exporter.sim.nvml.structs import (
    NVML_GPM_METRIC_ANY_TENSOR_UTIL,
    NVML_GPM_METRIC_DRAM_BW_UTIL,
    NVML_GPM_METRIC_GRAPHICS_UTIL,
    NVML_GPM_METRIC_SM_UTIL,
    c_nvmlGpmMetricsGet_t,
    c_nvmlGpmSample_t,
    c_nvmlGpmSupport_t,
)

R525 = 525
_GPM_COUNTER = {  # metric -> (counter index, scale)
    NVML_GPM_METRIC_GRAPHICS_UTIL: (0, 100.0),
    NVML_GPM_METRIC_SM_UTIL: (0, 100.0),
    NVML_GPM_METRIC_ANY_TENSOR_UTIL: (1, 100.0),
    NVML_GPM_METRIC_DRAM_BW_UTIL: (2, 100.0),
}


class SimNvmlGpmCalls(SimNvmlCalls):
    # -- GPM ----------------------------------------------------------------------------------
    def nvmlGpmQueryDeviceSupport(self, handle: Handle) -> c_nvmlGpmSupport_t:
        self._requires(R525)
        gpu = self._full("nvmlGpmQueryDeviceSupport", handle)
        return c_nvmlGpmSupport_t(1, int(gpu.gpm_supported))

    def nvmlGpmSampleAlloc(self) -> c_nvmlGpmSample_t:
        self._requires(R525)
        self.check("nvmlGpmSampleAlloc", None)
        return c_nvmlGpmSample_t()

    def nvmlGpmSampleFree(self, gpmSample: c_nvmlGpmSample_t) -> None:
        self.check("nvmlGpmSampleFree", None)

    def nvmlGpmSampleGet(
        self,
        device: Handle,
        gpmSample: c_nvmlGpmSample_t,
    ) -> c_nvmlGpmSample_t:
        return self._gpm_fill("nvmlGpmSampleGet", device, None, gpmSample)

    def nvmlGpmMigSampleGet(
        self,
        device: Handle,
        gpuInstanceId: int,
        gpmSample: c_nvmlGpmSample_t,
    ) -> c_nvmlGpmSample_t:
        return self._gpm_fill("nvmlGpmMigSampleGet", device, gpuInstanceId, gpmSample)

    def _gpm_fill(
        self, call: str, device: Handle, gi: int | None, sample: c_nvmlGpmSample_t
    ) -> c_nvmlGpmSample_t:
        self._requires(R525)
        gpu = self._full(call, device)
        if not gpu.gpm_supported:
            raise NVMLError_NotSupported()
        if gi is not None and gpu.instance(gi) is None:
            raise NVMLError_InvalidArgument()
        c = gpu.gpm.get(gi, [0.0, 0.0, 0.0])
        sample.index, sample.gpu_instance_id, sample.filled = gpu.index, gi, True
        sample.time_s, sample.counters = self.clock(), (c[0], c[1], c[2])
        return sample

    def nvmlGpmMetricsGet(
        self,
        metricsGet: c_nvmlGpmMetricsGet_t,
    ) -> c_nvmlGpmMetricsGet_t:
        self._requires(R525)
        self.check("nvmlGpmMetricsGet", None)
        s1, s2 = metricsGet.sample1, metricsGet.sample2
        if s1 is None or s2 is None or not (s1.filled and s2.filled):
            raise NVMLError_InvalidArgument()
        span = s2.time_s - s1.time_s
        for metric in metricsGet.metrics[: metricsGet.numMetrics]:
            spec = _GPM_COUNTER.get(metric.metricId)
            metric.value = 0.0
            if spec is None or span <= 0:
                bad = NVML_ERROR_NOT_SUPPORTED if spec is None else NVML_ERROR_INVALID_ARGUMENT
                metric.nvmlReturn = bad
                continue
            i, scale = spec
            metric.nvmlReturn = 0
            metric.value = min(100.0, (s2.counters[i] - s1.counters[i]) / span * scale)
        return metricsGet
