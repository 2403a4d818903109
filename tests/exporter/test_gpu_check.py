"""scripts/gpu_check.py end to end on the emulator: the real exporter collector, CLI and promtool.

The passing run must find the emulated GPUs and pass every check, nvidia-smi's included (a fake
one that reads the same emulated node through NVML calls). The failing run breaks two things at
once, an NVML call through the emulator's fault injection and the fake nvidia-smi reporting a
UUID no GPU has, and exactly those two checks must fail, with exit status 1. The nvidia-smi
comparison itself is table-tested on literal rows.
"""

from __future__ import annotations

import json
import subprocess
import sys
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from exporter.model import DeviceReading, NodeSnapshot, ProcessUsage
from exporter.nvml_readings import FB_FREE, FB_RESERVED, FB_USED, GPU_UTIL

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "scripts"))
from gpu_check_load import load_problems  # noqa: E402
from gpu_check_served import smi_problems  # noqa: E402

SCRIPT = REPO / "scripts" / "gpu_check.py"
WRONG_UUID = "GPU-00000000-0000-0000-0000-000000000000"


def run_check(out: Path, *extra: str) -> tuple[int, dict[str, Any], str]:
    cmd = [sys.executable, str(SCRIPT), "--lib", "sim", "--seconds", "2", "--cycles", "2"]
    proc = subprocess.run(
        [*cmd, "--out", str(out), *extra], capture_output=True, text=True, timeout=120, check=False
    )
    report = json.loads((out / "gpu_check.json").read_text())
    return proc.returncode, report, proc.stdout + proc.stderr


# A fake nvidia-smi faithful to the emulated node: gpu_check's sim node (the exporter's default
# flags, `mig` GPUs MIG-enabled), read through NVML calls as nvidia-smi reads the driver.
SIM_SMI = """
import sys, tempfile
from pathlib import Path
sys.path.insert(0, {repo!r})
from exporter.config import ExporterConfig
from exporter.sim import build_sim_backend
c = ExporterConfig(node_name="smi")
_, node = build_sim_backend(gpus=c.sim_gpus, mig={mig}, pods=c.sim_pods, seed=c.sim_seed,
    workloads_file=None, fixture_dir=Path(tempfile.mkdtemp()), node_name="smi")
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
    print(f"{{i}}, {{uuid}}, {{u}}, {{m.used >> 20}}, {{m.total >> 20}}")
"""


def fake_smi(tmp_path: Path, uuid: str = "lib.nvmlDeviceGetUUID(h)", mig: int = 0) -> Path:
    smi = tmp_path / "nvidia-smi"
    body = SIM_SMI.format(repo=str(REPO), uuid=uuid, mig=mig)
    smi.write_text(f"#!{sys.executable}\n{body}")
    smi.chmod(0o755)
    return smi


@pytest.mark.slow
@pytest.mark.parametrize("mig", [0, 2], ids=["whole-gpus", "two-mig-gpus"])
def test_sim_node_passes_every_check(tmp_path: Path, mig: int) -> None:
    smi = str(fake_smi(tmp_path, mig=mig))
    rc, report, output = run_check(tmp_path / "out", "--nvidia-smi", smi, "--sim.mig", str(mig))
    checks = {c["name"]: c["ok"] for c in report["checks"]}
    assert rc == 0, output
    assert report["passed"] is True
    assert report["identity"]["device_count"] == len(report["identity"]["devices"])
    assert all(d["uuid"].startswith("GPU-") for d in report["identity"]["devices"])
    assert set(checks) >= {"nvml_collectors", "scrape_labels", "promtool", "nvidia_smi"}
    assert all(ok is True for ok in checks.values()), checks
    gpus = [d for d in report["identity"]["devices"] if "mig_uuid" not in d]
    assert len(report["nvidia_smi_rows"]) == len(gpus) > 0
    assert sum(d["mig_mode"][0] == 1 for d in gpus) == mig
    assert len(report["cycles"]) == 2
    last = report["cycles"][-1]
    assert last["pods"], "the sim node's pods are attributed"
    assert any(d["processes"] for d in last["devices"])
    scrape = (tmp_path / "out" / "scrape-2.prom").read_text()
    assert all(d["uuid"] in scrape for d in report["identity"]["devices"])


@pytest.mark.slow
def test_nvml_fault_and_wrong_uuid_fail_their_checks(tmp_path: Path) -> None:
    rc, report, output = run_check(
        tmp_path / "out",
        "--sim.inject",
        "nvmlDeviceGetPowerUsage=999",
        "--nvidia-smi",
        str(fake_smi(tmp_path, uuid=repr(WRONG_UUID))),
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


def reading(free: float, used: float, reserved: float | None = 527.0) -> DeviceReading:
    values = {FB_FREE: free, FB_USED: used}
    if reserved is not None:
        values[FB_RESERVED] = reserved
    return DeviceReading(0, H200, "00000000:18:00.0", 0, "NVIDIA H200", "550.54.15", values=values)


@pytest.mark.parametrize(
    ("rows", "device", "problem"),
    [
        pytest.param([f"0, {H200}, 3, 1000, 143771"], reading(142244, 1000), None, id="match"),
        pytest.param(
            [f"0, {H200}, 3, 2400, 143771"], reading(142244, 1000), None, id="used-within-1pct"
        ),
        pytest.param(
            [f"0, {H200}, 3, 2500, 143771"], reading(142244, 1000), "memory used", id="used-off"
        ),
        pytest.param(
            [f"0, {H200}, 3, 1000, 140000"], reading(142244, 1000), "memory total", id="total-off"
        ),
        pytest.param(
            [f"0, {H200}, 3, 1000, 143771"], reading(142771, 1000, None), None, id="v1-no-reserved"
        ),
        pytest.param(
            ["0, GPU-other, 3, 1000, 143771"], reading(142244, 1000), "UUIDs", id="wrong-uuid"
        ),
        pytest.param(
            [f"0, {H200}, 3, 1000, 143771", "1, GPU-b, 0, 0, 143771"],
            reading(142244, 1000),
            "UUIDs",
            id="extra-gpu",
        ),
        pytest.param([f"0, {H200}, [N/A]"], reading(142244, 1000), "unreadable", id="short-row"),
        pytest.param(
            [f"0, {H200}, 3, [N/A], 143771"], reading(142244, 1000), "unreadable", id="na-memory"
        ),
    ],
)
def test_smi_comparison(rows: list[str], device: DeviceReading, problem: str | None) -> None:
    problems = smi_problems(rows, {device.uuid: device})
    if problem is None:
        assert problems == []
    else:
        assert problems and any(problem in p for p in problems), problems


def snapshot(util: float, *processes: ProcessUsage) -> NodeSnapshot:
    gpu = reading(142244, 1000)
    gpu = replace(gpu, values={**gpu.values, GPU_UTIL: util}, processes=processes)
    return NodeSnapshot("n", 0.0, 0.0, (gpu,), (), {}, {})


BUSY = ProcessUsage(4242, 0.9, 0.3, 600 << 20)
IDLE = snapshot(0.0)


@pytest.mark.parametrize(
    ("snaps", "problems"),
    [
        pytest.param([IDLE, snapshot(97.0, BUSY)], [], id="busy"),
        pytest.param([snapshot(97.0, BUSY), IDLE], ["GPU_UTIL", "no busy"], id="first-only"),
        pytest.param([IDLE, snapshot(0.0, BUSY)], ["GPU_UTIL"], id="no-utilization"),
        pytest.param(
            [IDLE, snapshot(97.0, ProcessUsage(4242, 0.9, 0.3, None))],
            ["no busy"],
            id="no-process-memory",
        ),
        pytest.param(
            [IDLE, snapshot(97.0, ProcessUsage(4242, 0.0, 0.0, 600 << 20))],
            ["no busy"],
            id="process-idle",
        ),
    ],
)
def test_load_needs_utilization_and_a_busy_process(
    snaps: list[NodeSnapshot], problems: list[str]
) -> None:
    found = load_problems(snaps)
    assert len(found) == len(problems), found
    for want, got in zip(problems, found, strict=True):
        assert want in got
