"""The emulator's PCIe throughput, NVLink throughput fields and remapped rows against pynvml's
signatures and constants and nvml.h's semantics; the exporter's NVLink bandwidth from them."""

from __future__ import annotations

import inspect
import re

import pytest
from exporter_fakes import EmulatedNode, emulator, pynvml_source

from exporter.nvml.nvlink import NVLINK_TOTAL, bandwidth
from exporter.sim.nvml import library as simnvml
from exporter.sim.nvml.device import SimProcess, h100
from exporter.sim.nvml.errors import NVMLError_InvalidArgument, NVMLError_NotSupported

PYNVML_SOURCE = pynvml_source().read_text()
ALL_LINKS = 0xFFFFFFFF


@pytest.mark.parametrize(
    "call", ["nvmlDeviceGetPcieThroughput", "nvmlDeviceGetRemappedRows", "nvmlDeviceGetFieldValues"]
)
def test_board_calls_take_pynvml_parameters(call: str) -> None:
    match = re.search(rf"^def {call}\(([^)]*)\):", PYNVML_SOURCE, re.M)
    assert match is not None
    theirs = [p.strip() for p in match[1].split(",") if p.strip()]
    assert list(inspect.signature(getattr(simnvml.SimNvml, call)).parameters)[1:] == theirs


@pytest.mark.parametrize(
    "constant",
    [
        "NVML_PCIE_UTIL_TX_BYTES",
        "NVML_PCIE_UTIL_RX_BYTES",
        "NVML_FI_DEV_NVLINK_THROUGHPUT_DATA_TX",
        "NVML_FI_DEV_NVLINK_THROUGHPUT_DATA_RX",
    ],
)
def test_board_constants_match_pynvml(constant: str) -> None:
    match = re.search(rf"^{constant}\s*=\s*(\d+)", PYNVML_SOURCE, re.M)
    assert match is not None and getattr(simnvml, constant) == int(match[1])


def test_pcie_throughput_follows_memory_activity_and_rejects_other_counters(
    clock: list[float],
) -> None:
    gpu = h100(0)
    gpu.processes.append(SimProcess(1, sm=lambda t: 0.8 if t > 1_002 else 0.0))
    lib = emulator(clock, [gpu])
    h = lib.nvmlDeviceGetHandleByIndex(0)
    idle = lib.nvmlDeviceGetPcieThroughput(h, simnvml.NVML_PCIE_UTIL_TX_BYTES)
    clock[0] += 5
    tx = lib.nvmlDeviceGetPcieThroughput(h, simnvml.NVML_PCIE_UTIL_TX_BYTES)
    rx = lib.nvmlDeviceGetPcieThroughput(h, simnvml.NVML_PCIE_UTIL_RX_BYTES)
    assert 0 < idle < tx < rx  # KB/s; a training step reads more than it writes
    with pytest.raises(NVMLError_InvalidArgument):
        lib.nvmlDeviceGetPcieThroughput(h, 2)  # NVML_PCIE_UTIL_COUNT is not a counter


def test_remapped_rows_are_pynvmls_tuple_and_not_supported_under_mig(clock: list[float]) -> None:
    whole, mig = h100(0), h100(1, mig=True)
    whole.remapped_rows = (3, 1, 0, 1)
    lib = emulator(clock, [whole, mig])
    assert lib.nvmlDeviceGetRemappedRows(lib.nvmlDeviceGetHandleByIndex(0)) == (3, 1, 0, 1)
    with pytest.raises(NVMLError_NotSupported):  # nvml.h: "If MIG is enabled"
        lib.nvmlDeviceGetRemappedRows(lib.nvmlDeviceGetHandleByIndex(1))


def test_nvlink_fields_take_a_link_or_every_link_in_scope_id(clock: list[float]) -> None:
    busy, pcie_card = h100(0), h100(1)
    busy.processes.append(SimProcess(1, sm=lambda t: 1.0))
    pcie_card.nvlinks = 0
    lib = emulator(clock, [busy, pcie_card])
    clock[0] += 10
    tx, rx = (
        simnvml.NVML_FI_DEV_NVLINK_THROUGHPUT_DATA_TX,
        simnvml.NVML_FI_DEV_NVLINK_THROUGHPUT_DATA_RX,
    )
    h = lib.nvmlDeviceGetHandleByIndex(0)
    total, link0, rx_all, bad = lib.nvmlDeviceGetFieldValues(
        h, [(tx, ALL_LINKS), (tx, 0), (rx, ALL_LINKS), (tx, 18)]
    )
    assert total.nvmlReturn == 0 and total.valueType == 3  # unsigned long long, in KiB
    assert total.value.ullVal > 0 and abs(link0.value.ullVal * 18 - total.value.ullVal) < 18
    assert 0 < rx_all.value.ullVal <= total.value.ullVal
    assert bad.nvmlReturn == simnvml.NVML_ERROR_INVALID_ARGUMENT  # H100 SXM has links 0-17
    (none,) = lib.nvmlDeviceGetFieldValues(lib.nvmlDeviceGetHandleByIndex(1), [(tx, ALL_LINKS)])
    assert none.nvmlReturn == simnvml.NVML_ERROR_NOT_SUPPORTED


@pytest.mark.parametrize(
    ("previous", "total", "stamp", "expected"),
    [
        pytest.param(None, 5000.0, 2_000_000, 0.0, id="first-reading"),
        pytest.param((1000.0, 1_000_000), 0.0, 2_000_000, 0.0, id="zero-sum"),
        pytest.param((1000.0, 1_000_000), 3_001_000.0, 3_000_000, 1500.0, id="kib-per-s-over-1000"),
        pytest.param((1000.0, 2_000_000), 9000.0, 2_000_000, 0.0, id="same-timestamp"),
    ],
)
def test_nvlink_bandwidth_is_dcgms_computation(
    previous: tuple[float, int] | None, total: float, stamp: int, expected: float
) -> None:
    assert bandwidth(previous, total, stamp) == expected


def test_the_exporter_serves_nvlink_bandwidth_only_on_gpus_with_nvlink() -> None:
    busy, pcie_card = h100(0), h100(1)
    busy.processes.append(SimProcess(1, sm=lambda t: 1.0))
    pcie_card.nvlinks = 0
    node = EmulatedNode([busy, pcie_card])
    first = node.sweep().devices
    second = node.sweep().devices
    assert first[0].values[NVLINK_TOTAL] == 0.0  # DCGM's first reading
    # 50e6 KiB/s each way at full activity, RX 98% of TX: (1 + 0.98) x 50e6 / 1000
    assert second[0].values[NVLINK_TOTAL] == pytest.approx(99_000, rel=0.01)
    assert NVLINK_TOTAL not in second[1].values
    assert all(node.sweep().collector_success.values())
