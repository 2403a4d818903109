"""gpu-reclaim exporter: DCGM-compatible device metrics and true per-pod GPU usage from NVML.

Where a change goes, top of the layers first (import-linter keeps them, see pyproject.toml):
`cli` (flags, backend choice, serving); `sim/` (the simulated node and, in `sim/nvml/`, the NVML
emulator: test and demo code the production path never imports); `server` (HTTP) over `cycle`
(the collect loop); `config` (flags to one frozen dataclass); the readers `nvml/` (the only
pynvml door and the device sweep) and `node/` (cgroups, kubelet PodResources, the API server's
pod list); the pure core `attribution`, `render` and `health`; the data they share, `sources` and
`model`.
"""
