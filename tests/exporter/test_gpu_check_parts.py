"""scripts/gpu_check.py's checks table-tested on literal inputs, one part at a time.

The nvidia-smi comparison (`gpu_check_served.smi_problems`) on literal rows against one reading,
and between two readings of a GPU warming up; the load's numbers (`gpu_check_quant`) on literal
snapshots; the energy check on counter reads timed as gpu_check times them (`gpu_check_timed`),
and that timing itself on a stand-in library whose read moves an injected clock; the Python and
import checks (`gpu_check_env`) on a literal version. The end-to-end runs are in test_gpu_check.py.
"""

from __future__ import annotations

import sys
from dataclasses import replace
from typing import Any

import pytest
from repo_paths import REPO

from exporter.model import DeviceReading, NodeSnapshot, ProcessUsage
from exporter.nvml.readings import FB_FREE, FB_RESERVED, FB_USED, GPU_UTIL, family

POWER = family("DCGM_FI_DEV_POWER_USAGE")
TEMP = family("DCGM_FI_DEV_GPU_TEMP")
SM_CLOCK = family("DCGM_FI_DEV_SM_CLOCK")
MEM_CLOCK = family("DCGM_FI_DEV_MEM_CLOCK")
ENERGY = family("DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION")
GR = family("DCGM_FI_PROF_GR_ENGINE_ACTIVE")


sys.path.insert(0, str(REPO / "scripts"))
from gpu_check_env import environment_checks  # noqa: E402
from gpu_check_quant import (  # noqa: E402
    check_energy,
    check_gpm,
    check_one_busy,
    check_two_loads,
)
from gpu_check_served import smi_problems  # noqa: E402
from gpu_check_timed import ReadTime, TimedLib  # noqa: E402

H200 = "GPU-11111111-2222-3333-4444-555555555555"
SENSORS = {POWER: 420.0, TEMP: 61.0, SM_CLOCK: 1980.0, MEM_CLOCK: 2619.0}


def reading(free: float, used: float, reserved: float | None = 527.0) -> DeviceReading:
    values = {FB_FREE: free, FB_USED: used, **SENSORS}
    if reserved is not None:
        values[FB_RESERVED] = reserved
    return DeviceReading(0, H200, "00000000:18:00.0", 0, "NVIDIA H200", "550.54.15", values=values)


def row(used: str = "1000", total: str = "143771", sensors: str = "431.50, 62, 1980, 2619") -> str:
    return f"0, {H200}, 3, {used}, {total}, {sensors}"


@pytest.mark.parametrize(
    ("rows", "device", "problem"),
    [
        pytest.param([row()], reading(142244, 1000), None, id="match"),
        pytest.param([row("2400")], reading(142244, 1000), None, id="used-within-1pct"),
        pytest.param([row("2500")], reading(142244, 1000), "memory used", id="used-off"),
        pytest.param([row(total="140000")], reading(142244, 1000), "memory total", id="total-off"),
        pytest.param([row()], reading(142771, 1000, None), None, id="v1-no-reserved"),
        pytest.param([row().replace(H200, "GPU-other")], reading(142244, 1000), "UUIDs", id="uuid"),
        pytest.param(
            [row(), "1, GPU-b, 0, 0, 143771, 70, 30, 345, 2619"],
            reading(142244, 1000),
            "UUIDs",
            id="extra-gpu",
        ),
        pytest.param([f"0, {H200}, [N/A]"], reading(142244, 1000), "unreadable", id="short-row"),
        pytest.param([row("[N/A]")], reading(142244, 1000), "unreadable", id="na-memory"),
        pytest.param(
            [row(sensors="[N/A], [N/A], [N/A], [N/A]")],
            reading(142244, 1000),
            None,
            id="na-sensors",
        ),
        pytest.param(
            [row(sensors="300.00, 62, 1980, 2619")], reading(142244, 1000), "POWER", id="power-off"
        ),
        pytest.param(
            [row(sensors="431.50, 70, 1980, 2619")], reading(142244, 1000), "TEMP", id="temp-off"
        ),
        pytest.param(
            [row(sensors="431.50, 62, 1410, 2619")], reading(142244, 1000), "SM_CLOCK", id="sm-off"
        ),
        pytest.param(
            [row(sensors="431.50, 62, 1980, 1593")],
            reading(142244, 1000),
            "MEM_CLOCK",
            id="mem-off",
        ),
    ],
)
def test_smi_comparison(rows: list[str], device: DeviceReading, problem: str | None) -> None:
    problems = smi_problems(rows, {device.uuid: device})
    if problem is None:
        assert problems == []
    else:
        assert problems and any(problem in p for p in problems), problems


def warmer(temp: float, watts: float, used: float = 1000) -> DeviceReading:
    d = reading(142244 + 1000 - used, used)
    return replace(d, values={**d.values, TEMP: temp, POWER: watts})


@pytest.mark.parametrize(
    ("smi_row", "problem"),
    [
        pytest.param(row(sensors="360.00, 64, 1980, 2619"), None, id="between-the-readings"),
        pytest.param(row(sensors="300.00, 62, 1980, 2619"), "POWER", id="power-below-both"),
        pytest.param(row(sensors="431.50, 72, 1980, 2619"), "TEMP", id="temp-above-both"),
        pytest.param(row("9000"), "memory used", id="used-above-both"),
    ],
)
def test_smi_between_two_readings(smi_row: str, problem: str | None) -> None:
    """nvidia-smi ran between two readings of a GPU warming up (60 C, 340 W, then 68 C, 420 W):
    a value between them is right, even where it is out of tolerance of the first alone."""
    before, after = warmer(60, 340), warmer(68, 420, used=2000)
    problems = smi_problems([smi_row], {H200: before}, {H200: after})
    if problem is None:
        assert problems == []
        assert smi_problems([smi_row], {H200: before}) != [], "the first reading alone is off"
    else:
        assert problems and any(problem in p for p in problems), problems


def snap(
    util: float, *sm: float, at: float = 0.0, energy: float = 0.0, gr: float | None = None
) -> NodeSnapshot:
    values = {GPU_UTIL: util, POWER: 400.0, ENERGY: energy}
    if gr is not None:
        values[GR] = gr
    procs = tuple(ProcessUsage(4242 + i, s, 0.3, 600 << 20) for i, s in enumerate(sm))
    gpu = replace(reading(142244, 1000), values=values, processes=procs)
    return NodeSnapshot("n", at, 0.0, (gpu,), (), {}, {})


def phase(*snaps: NodeSnapshot) -> list[NodeSnapshot]:
    return [snap(0.0), *snaps]  # the first cycle straddles the change and is left out


@pytest.mark.parametrize(
    ("check", "snaps", "ok"),
    [
        pytest.param(check_one_busy, phase(snap(97, 0.95), snap(99, 0.97)), True, id="one-busy"),
        pytest.param(
            check_one_busy, phase(snap(97, 0.2), snap(99, 0.2)), False, id="one-busy-read-20pct"
        ),
        pytest.param(check_one_busy, phase(snap(3, 0.03)), False, id="one-busy-no-load"),
        pytest.param(check_one_busy, phase(snap(97)), False, id="one-busy-no-process"),
        pytest.param(check_two_loads, phase(snap(98, 0.49, 0.47)), True, id="two-loads"),
        pytest.param(check_two_loads, phase(snap(98, 0.0, 0.0)), False, id="two-loads-read-0"),
        pytest.param(check_two_loads, phase(snap(98, 0.95, 0.01)), False, id="two-loads-one-idle"),
        pytest.param(check_two_loads, phase(snap(98, 0.9)), False, id="two-loads-one-process"),
        pytest.param(check_gpm, phase(snap(97, 0.9, gr=0.93)), True, id="gpm"),
        pytest.param(check_gpm, phase(snap(97, 0.9, gr=0.5)), False, id="gpm-off"),
        pytest.param(check_gpm, phase(snap(97, 0.9)), None, id="gpm-none"),
    ],
)
def test_the_loads_numbers(check: Any, snaps: list[NodeSnapshot], ok: bool | None) -> None:
    got = check(snaps, H200)
    assert got.ok is ok, got.detail


def read(before: float, after: float | None = None) -> dict[str, ReadTime]:
    return {H200: ReadTime(before, before if after is None else after)}


@pytest.mark.parametrize(
    ("counted_j", "second_read", "ok"),
    [
        pytest.param(800, read(12.0), True, id="2s-apart"),
        pytest.param(400, read(12.0), False, id="half"),
        pytest.param(1000, read(12.0), False, id="over-15pct"),
        # The snapshots are taken 2 s apart, but the second read came a second late (a busy
        # machine): 1200 J at 400 W is right for the 3 s between the reads.
        pytest.param(1200, read(13.0), True, id="read-late"),
        # Where the thread was held up during the read: the read fell between 12 and 12.5 s.
        pytest.param(1000, read(12.0, 12.5), True, id="read-held-up"),
        pytest.param(1200, read(12.0, 12.5), False, id="more-than-the-longest-span"),
    ],
)
def test_energy_against_power_times_the_time_between_the_reads(
    counted_j: float, second_read: dict[str, ReadTime], ok: bool
) -> None:
    snaps = [snap(0), snap(97, at=10, energy=0), snap(97, at=12, energy=counted_j * 1000)]
    got = check_energy(snaps, H200, [read(0.0), read(10.0), second_read])
    assert got.ok is ok, got.detail


def test_energy_needs_two_timed_steady_reads() -> None:
    snaps = [snap(0), snap(97, at=10, energy=0), snap(97, at=12, energy=800_000)]
    one_steady = check_energy(snaps[:2], H200, [read(0.0), read(10.0)])
    assert one_steady.ok is False and "1 steady cycle(s)" in one_steady.detail
    untimed = check_energy(snaps, H200, [read(0.0), read(10.0), {}])
    assert untimed.ok is False and "not timed" in untimed.detail


class Counter:
    """An NVML library stand-in whose energy read takes `hold_s` on the clock it moves."""

    def __init__(self, clock: list[float], hold_s: float) -> None:
        self.clock, self.hold_s = clock, hold_s
        self.other_calls = 0

    def nvmlDeviceGetTotalEnergyConsumption(self, handle: int) -> int:
        self.clock[0] += self.hold_s
        return 5

    def nvmlDeviceGetUUID(self, handle: int) -> bytes:
        return f"GPU-{handle}".encode()

    def nvmlDeviceGetPowerUsage(self, handle: int) -> int:
        self.other_calls += 1
        return 400_000


def test_timed_lib_notes_each_energy_read_by_uuid() -> None:
    clock = [100.0]
    inner = Counter(clock, hold_s=0.25)
    timed = TimedLib(inner, clock=lambda: clock[0])
    assert timed.nvmlDeviceGetTotalEnergyConsumption(3) == 5
    assert timed.nvmlDeviceGetPowerUsage(3) == 400_000 and inner.other_calls == 1
    assert timed.energy_reads() == {"GPU-3": ReadTime(100.0, 100.25)}
    assert timed.energy_reads() == {}


@pytest.mark.parametrize(
    ("version", "python_ok", "imports_ok"),
    [
        pytest.param((3, 8, 10), False, None, id="old-python-imports-not-tried"),
        pytest.param((3, 11, 7), True, True, id="this-python"),
    ],
)
def test_environment_checks(
    version: tuple[int, int, int], python_ok: bool, imports_ok: bool | None
) -> None:
    python, imports = environment_checks("sim", version)
    assert (python.ok, imports.ok) == (python_ok, imports_ok), (python, imports)
