"""The emulator's process calls: who runs on a device, and how busy each process was.

NVML semantics reproduced (nvml.h, and nvidia-ml-py's pynvml.py for the Python surface):
- `nvmlDeviceGetComputeRunningProcesses_v3` / `_v2` list the processes with a compute context;
  `nvmlDeviceGetMPSComputeRunningProcesses_v3` / `_v2` the MPS clients (nvml.h: "information only
  about compute running processes ... utilizing MPS"); with MPS the compute list holds the MPS
  server instead of its clients. `_v3` exists from R510 (NVML 11.6), the MPS call from R470
  (NVML 11.4): an older driver lacks the symbol, which pynvml reports as FunctionNotFound.
- pynvml's unversioned `nvmlDeviceGetComputeRunningProcesses` / `nvmlDeviceGetMPSCompute...`
  call `_v3` under `@throwOnVersionMismatch`, which turns FunctionNotFound into
  `NVMLLibraryMismatchError`, a plain Exception without `.value`.
- On a MIG-enabled GPU the parent handle answers with every instance's processes "only if the
  caller has appropriate privileges" (nvml.h): NoPermission when the emulator is unprivileged.
- `nvmlDeviceGetProcessUtilization(handle, lastSeenTimeStamp)` answers from the driver's sample
  buffer as `exporter.sim.nvml.sampling` describes (one averaged row per busy process, or one row
  per busy sample period as the GPU's `process_rows` says; staggered timestamps, stale PIDs,
  occasional junk), raises NotFound when no process was busy since
  `lastSeenTimeStamp`, and NotSupported on MIG-enabled GPUs (nvml.h: "On MIG-enabled GPUs,
  querying process utilization is not currently supported").
"""

from __future__ import annotations

from exporter.sim.nvml.api import Handle, SimNvmlCalls
from exporter.sim.nvml.device import SimGpu
from exporter.sim.nvml.errors import (
    NVMLError_FunctionNotFound,
    NVMLError_NoPermission,
    NVMLError_NotFound,
    NVMLError_NotSupported,
    NVMLLibraryMismatchError,
)
from exporter.sim.nvml.sampling import UtilizationRow, junk_rows
from exporter.sim.nvml.structs import (
    SimMigHandle,
    c_nvmlProcessInfo_v3_t,
    c_nvmlProcessUtilizationSample_t,
)

R470, R510 = 470, 510


class SimNvmlProcessCalls(SimNvmlCalls):
    def _running(self, call: str, handle: Handle, *, mps: bool) -> list[c_nvmlProcessInfo_v3_t]:
        gpu = self._gpu(call, handle)
        now = self.clock()
        gi = None
        if isinstance(handle, SimMigHandle):
            gi = self._instance(gpu, handle).gpu_instance_id
        elif gpu.mig_enabled and not self.privileged:
            raise NVMLError_NoPermission()
        out = []
        live = gpu.live_processes(now, gi)
        for p in live:
            if p.mps != mps:
                continue
            info = c_nvmlProcessInfo_v3_t(p.pid, p.memory_bytes(now))
            if p.gpu_instance_id is not None:
                info.gpuInstanceId, info.computeInstanceId = p.gpu_instance_id, 0
            out.append(info)
        if not mps and gpu.mps_server_pid is not None and any(p.mps for p in live):
            out.append(c_nvmlProcessInfo_v3_t(gpu.mps_server_pid, 32 << 20))
        return out

    def nvmlDeviceGetComputeRunningProcesses_v3(
        self, handle: Handle
    ) -> list[c_nvmlProcessInfo_v3_t]:
        self._requires(R510)
        return self._running("nvmlDeviceGetComputeRunningProcesses_v3", handle, mps=False)

    def nvmlDeviceGetComputeRunningProcesses_v2(
        self, handle: Handle
    ) -> list[c_nvmlProcessInfo_v3_t]:
        return self._running("nvmlDeviceGetComputeRunningProcesses_v2", handle, mps=False)

    def nvmlDeviceGetComputeRunningProcesses(self, handle: Handle) -> list[c_nvmlProcessInfo_v3_t]:
        self.check("nvmlDeviceGetComputeRunningProcesses", handle.index)  # faults by either name
        try:
            return self.nvmlDeviceGetComputeRunningProcesses_v3(handle)
        except NVMLError_FunctionNotFound:
            raise NVMLLibraryMismatchError(
                _MISMATCH + "nvmlDeviceGetComputeRunningProcesses_v2"
            ) from None

    def nvmlDeviceGetMPSComputeRunningProcesses_v3(
        self, handle: Handle
    ) -> list[c_nvmlProcessInfo_v3_t]:
        self._requires(R510)
        return self._running("nvmlDeviceGetMPSComputeRunningProcesses_v3", handle, mps=True)

    def nvmlDeviceGetMPSComputeRunningProcesses_v2(
        self, handle: Handle
    ) -> list[c_nvmlProcessInfo_v3_t]:
        self._requires(R470)
        return self._running("nvmlDeviceGetMPSComputeRunningProcesses_v2", handle, mps=True)

    def nvmlDeviceGetMPSComputeRunningProcesses(
        self, handle: Handle
    ) -> list[c_nvmlProcessInfo_v3_t]:
        self.check("nvmlDeviceGetMPSComputeRunningProcesses", handle.index)
        try:
            return self.nvmlDeviceGetMPSComputeRunningProcesses_v3(handle)
        except NVMLError_FunctionNotFound:
            raise NVMLLibraryMismatchError(
                _MISMATCH + "nvmlDeviceGetMPSComputeRunningProcesses_v2"
            ) from None

    def nvmlDeviceGetProcessUtilization(
        self,
        handle: Handle,
        timeStamp: int,
    ) -> list[c_nvmlProcessUtilizationSample_t]:
        gpu = self._full("nvmlDeviceGetProcessUtilization", handle)
        if gpu.mig_enabled or not gpu.process_utilization_supported:
            raise NVMLError_NotSupported()
        now_us = int(self.clock() * 1e6)
        rows = gpu.samples.since(int(timeStamp), now_us, gpu.process_rows)
        if not rows:
            raise NVMLError_NotFound()
        gpu.utilization_answers += 1
        rows += junk_rows(gpu.utilization_answers, gpu.junk_every, now_us)
        rows += _take_injected(gpu)
        return [
            c_nvmlProcessUtilizationSample_t(r.pid, r.time_stamp_us, r.sm_util, r.mem_util, 0, 0)
            for r in rows
        ]

    # -- the driver's side --------------------------------------------------------------------
    def inject_samples(self, index: int, rows: list[UtilizationRow]) -> None:
        """Make the next non-empty process-utilization answer of GPU `index` carry `rows` too
        (not an NVML call: the driver misbehaving, as in nvtop#110 and DCGM#83)."""
        self.gpus[index].injected_rows.extend(rows)


_MISMATCH = (
    "Unversioned function called and the pyNVML version does not match the NVML lib version. "
    "Either use matching pyNVML and NVML lib versions or use a versioned function such as "
)


def _take_injected(gpu: SimGpu) -> list[UtilizationRow]:
    rows = list(gpu.injected_rows)
    gpu.injected_rows.clear()
    return rows
