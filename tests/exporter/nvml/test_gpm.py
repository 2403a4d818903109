"""GPM activity: samples held between sweeps and freed once used or on close."""

from __future__ import annotations

import pytest
from exporter_fakes import EmulatedNode, busy_gpus

from exporter.nvml.gpm import GPM_FAMILIES


def test_close_frees_gpm_samples_and_shuts_down() -> None:
    node = EmulatedNode(busy_gpus(2))
    node.sweep()
    node.sweep()
    node.source.close()
    assert node.lib.initialized == 0
    assert node.lib.calls["nvmlGpmSampleFree"] == 2 + 2  # one per sweep-pair, then the held ones


def test_activity_needs_two_samples_and_a_gpu_without_gpm_is_asked_once() -> None:
    gpus = busy_gpus(2)
    gpus[1].gpm_supported = False
    node = EmulatedNode(gpus)
    first = node.sweep()
    assert not any(f in d.values for d in first.devices for f in GPM_FAMILIES)
    second = {d.index: d for d in node.sweep().devices}
    assert second[0].values[GPM_FAMILIES[0]] == pytest.approx(0.5)  # GR engine, a ratio
    assert set(GPM_FAMILIES) <= set(second[0].values)
    assert not set(GPM_FAMILIES) & set(second[1].values) and not second[1].failed
    node.sweep()
    assert node.lib.calls["nvmlGpmQueryDeviceSupport"] == 2  # once per GPU, never again
    # Every sample taken is freed once the next sweep has used it: none piles up.
    assert node.lib.calls["nvmlGpmSampleAlloc"] - node.lib.calls["nvmlGpmSampleFree"] == 1
