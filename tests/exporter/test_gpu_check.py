"""scripts/gpu_check.py end to end on the emulator: the real exporter collector, CLI and promtool.

The passing run must find the emulated GPUs and pass every check, the load's numbers and
nvidia-smi's included (a fake one that builds the same emulated node, scripted load and all, and
reads it through NVML calls). The failing run breaks two things at once, an NVML call through the
emulator's fault injection and the fake nvidia-smi reporting a UUID no GPU has, and exactly those
two checks must fail, with exit status 1. A Python without the packages still gets its report.
The nvidia-smi comparison and the load's numbers are table-tested on literal inputs (the
lastSeenTimeStamp experiment in test_gpu_check_window.py); the energy check on counter reads
timed as gpu_check times them, nvidia-smi between two readings.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from dataclasses import replace
from pathlib import Path
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
from gpu_check_window import LOOKBACK_S, WINDOW  # noqa: E402

SCRIPT = REPO / "scripts" / "gpu_check.py"
GIVE_UP_S = 900  # only a hung check takes this long, even on a busy machine
WRONG_UUID = "GPU-00000000-0000-0000-0000-000000000000"


def run_check(
    out: Path, *extra: str, env: dict[str, str] | None = None
) -> tuple[int, dict[str, Any], str]:
    cmd = [sys.executable, str(SCRIPT), "--lib", "sim", "--seconds", "12", *extra]
    proc = subprocess.run(
        [*cmd, "--out", str(out)],
        capture_output=True,
        text=True,
        timeout=GIVE_UP_S,
        check=False,
        env=env,
    )
    report = json.loads((out / "gpu_check.json").read_text())
    return proc.returncode, report, proc.stdout + proc.stderr


# A fake nvidia-smi faithful to the emulated node: gpu_check's sim node (its workloads file, the
# scripted load included, `mig` GPUs MIG-enabled), read through NVML calls as nvidia-smi reads
# the driver. Its emulator starts later than gpu_check's, but both integrate the same history.
SIM_SMI = """
import sys, tempfile
from pathlib import Path
sys.path.insert(0, {repo!r})
from exporter.sim.backend import build_sim_backend
_, node = build_sim_backend(gpus={mig} + 3, mig={mig}, pods=0, seed=0,
    workloads_file=Path({out!r}) / "sim-workloads.yaml", fixture_dir=Path(tempfile.mkdtemp()),
    node_name="smi")
lib = node.lib
lib.nvmlInit()
for i in range(lib.nvmlDeviceGetCount()):
    h = lib.nvmlDeviceGetHandleByIndex(i)
    m = lib.nvmlDeviceGetMemoryInfo(h, lib.nvmlMemory_v2)
    try:
        u = lib.nvmlDeviceGetUtilizationRates(h).gpu
    except lib.NVMLError_NotSupported:  # a MIG-enabled GPU
        u = "[N/A]"
    uuid = {uuid}
    watts = f"{{lib.nvmlDeviceGetPowerUsage(h) / 1000:.2f}}"
    temp = lib.nvmlDeviceGetTemperature(h, 0)
    sm, mem = lib.nvmlDeviceGetClockInfo(h, 1), lib.nvmlDeviceGetClockInfo(h, 2)
    row = (i, uuid, u, m.used >> 20, m.total >> 20, watts, temp, sm, mem)
    print(", ".join(str(f) for f in row))
"""


def fake_smi(
    tmp_path: Path, out: Path, uuid: str = "lib.nvmlDeviceGetUUID(h)", mig: int = 0
) -> Path:
    smi = tmp_path / "nvidia-smi"
    body = SIM_SMI.format(repo=str(REPO), out=str(out), uuid=uuid, mig=mig)
    smi.write_text(f"#!{sys.executable}\n{body}")
    smi.chmod(0o755)
    return smi


@pytest.mark.slow
@pytest.mark.parametrize(
    ("mig", "load", "numbers"),
    [
        (0, "auto", {"one_busy_process", "two_loads", "gpm_vs_gpu_util", "energy_vs_power"}),
        (2, "none", {"energy_vs_power"}),
    ],
    ids=["whole-gpus-under-load", "two-mig-gpus-idle"],
)
def test_sim_node_passes_every_check(
    tmp_path: Path, mig: int, load: str, numbers: set[str]
) -> None:
    out = tmp_path / "out"
    smi = str(fake_smi(tmp_path, out, mig=mig))
    rc, report, output = run_check(out, "--nvidia-smi", smi, "--sim.mig", str(mig), "--load", load)
    checks = {c["name"]: c["ok"] for c in report["checks"]}
    assert rc == 0, output
    assert report["passed"] is True
    assert report["identity"]["device_count"] == len(report["identity"]["devices"])
    assert all(d["uuid"].startswith("GPU-") for d in report["identity"]["devices"])
    expected = {"python", "imports", "nvml_collectors", "scrape_labels", "promtool", "nvidia_smi"}
    assert set(checks) >= expected | numbers
    assert all(ok is True for ok in checks.values()), checks
    window = report["process_utilization_window"]
    assert checks["process_utilization_window"] is True and window["verdict"] == WINDOW
    assert len(window["answers"]) == 2 * (len(LOOKBACK_S) + 1)
    gpus = [d for d in report["identity"]["devices"] if "mig_uuid" not in d]
    assert len(report["nvidia_smi_rows"]) == len(gpus) > 0
    assert sum(d["mig_mode"][0] == 1 for d in gpus) == mig
    assert len(report["cycles"]) >= 3
    last = report["cycles"][-1]
    assert last["pods"], "the sim node's pods are attributed"
    assert any(d["processes"] for d in last["devices"])
    scrape = (tmp_path / "out" / "scrape-2.prom").read_text()
    assert all(d["uuid"] in scrape for d in report["identity"]["devices"])


@pytest.mark.slow
def test_nvml_fault_and_wrong_uuid_fail_their_checks(tmp_path: Path) -> None:
    out = tmp_path / "out"
    rc, report, output = run_check(
        out,
        "--load",
        "none",
        "--sim.inject",
        "nvmlDeviceGetPowerUsage=999",
        "--nvidia-smi",
        str(fake_smi(tmp_path, out, uuid=repr(WRONG_UUID))),
    )
    failed = {c["name"]: c["detail"] for c in report["checks"] if c["ok"] is False}
    assert rc == 1, output
    assert report["passed"] is False
    assert set(failed) == {"nvml_collectors", "nvidia_smi"}, failed
    assert "power" in failed["nvml_collectors"]
    assert "nvmlDeviceGetPowerUsage" in failed["nvml_collectors"]
    assert WRONG_UUID in failed["nvidia_smi"]
    assert "FAIL nvidia_smi" in output


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


def test_a_box_without_the_packages_still_gets_its_report(tmp_path: Path) -> None:
    """A Python on which aiohttp will not import: the report says so, nothing else runs."""
    shadow = tmp_path / "shadow" / "aiohttp"
    shadow.mkdir(parents=True)
    (shadow / "__init__.py").write_text('raise ImportError("no aiohttp on this box")\n')
    env = {**os.environ, "PYTHONPATH": str(shadow.parent)}
    rc, report, output = run_check(tmp_path / "out", env=env)
    checks = {c["name"]: c for c in report["checks"]}
    assert rc == 1 and report["passed"] is False
    assert checks["python"]["ok"] is True and checks["imports"]["ok"] is False
    assert "aiohttp (pip install aiohttp): no aiohttp on this box" in checks["imports"]["detail"]
    assert set(checks) == {"python", "imports"}
    assert "FAIL imports" in output
