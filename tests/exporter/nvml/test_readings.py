"""The device readings as data: each yields contract families, and together they cover them."""

from __future__ import annotations

from exporter_fakes import EmulatedNode, busy_gpus

from exporter.nvml.events import XID_ERRORS
from exporter.nvml.gpm import GPM_FAMILIES
from exporter.nvml.nvlink import NVLINK_TOTAL
from exporter.nvml.readings import READINGS, Reading
from exporter.sim.nvml.device import h100
from exporter.sim.nvml.library import SimNvml
from gpu_contract import BY_NAME, DEVICE_METRICS


def _with_fallbacks(readings: tuple[Reading, ...]) -> list[Reading]:
    out = []
    for reading in readings:
        fallback: Reading | None = reading
        while fallback is not None:
            out.append(fallback)
            fallback = fallback.fallback
    return out


def test_values_use_contract_families_only() -> None:
    """Every reading (fallbacks too) parses its NVML call's answer into contract families, and
    the readings with the GPM, XID and NVLink readers cover every device family of the contract."""
    lib = SimNvml([h100(0)], clock=lambda: 10_000.0, driver_version="570.86.15")  # has every call
    lib.nvmlInit()
    handle = lib.nvmlDeviceGetHandleByIndex(0)
    assert READINGS
    covered: set[str] = set()
    for reading in _with_fallbacks(READINGS):
        values = reading.parse(getattr(lib, reading.call)(handle, *reading.args(lib)))
        assert values and set(values) <= set(BY_NAME), reading.call + reading.tag
        covered |= set(values)
    device_families = {m.name for m in DEVICE_METRICS}
    assert covered == device_families - set(GPM_FAMILIES) - {XID_ERRORS, NVLINK_TOTAL}
    # And what a sweep publishes, GPUs and MIG instances alike, is named by the contract.
    node = EmulatedNode([*busy_gpus(1), h100(1, mig=True)])
    node.sweep()
    devices = node.sweep().devices
    assert len(devices) == 2 + 7
    for dev in devices:
        assert dev.values and set(dev.values) <= device_families, dev
