"""Tests of `exporter.sim`, the simulated node."""
