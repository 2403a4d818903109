"""Tests of `exporter.node`, one module per node reader."""
