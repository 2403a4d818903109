"""Tests of `exporter.nvml`, one module per module of the NVML path."""
