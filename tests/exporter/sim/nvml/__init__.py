"""Tests of `exporter.sim.nvml`, the NVML emulator, against pynvml and nvml.h."""
