"""gpu-reclaim exporter: DCGM-compatible device metrics and true per-pod GPU usage from NVML."""
