"""scripts/gpu_check.py end to end on the emulator: the real exporter collector, CLI and promtool.

The passing run must find the emulated GPUs and pass every check it can make here (nvidia-smi is
hidden, so that one is skipped). The failing run breaks two things at once, an NVML call through
the emulator's fault injection and a fake nvidia-smi that reports a UUID no GPU has, and exactly
those two checks must fail, with exit status 1.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

pytestmark = pytest.mark.slow

REPO = Path(__file__).resolve().parents[2]
SCRIPT = REPO / "scripts" / "gpu_check.py"
WRONG_UUID = "GPU-00000000-0000-0000-0000-000000000000"


def run_check(out: Path, *extra: str) -> tuple[int, dict[str, Any], str]:
    cmd = [sys.executable, str(SCRIPT), "--lib", "sim", "--seconds", "2", "--cycles", "2"]
    proc = subprocess.run(
        [*cmd, "--out", str(out), *extra], capture_output=True, text=True, timeout=120, check=False
    )
    report = json.loads((out / "gpu_check.json").read_text())
    return proc.returncode, report, proc.stdout + proc.stderr


def fake_smi(tmp_path: Path) -> Path:
    smi = tmp_path / "nvidia-smi"
    smi.write_text(f"#!{sys.executable}\nprint('0, {WRONG_UUID}, 0, 0, 81559')\n")
    smi.chmod(0o755)
    return smi


def test_sim_node_passes_every_check(tmp_path: Path) -> None:
    rc, report, output = run_check(tmp_path / "out", "--nvidia-smi", "")
    checks = {c["name"]: c["ok"] for c in report["checks"]}
    assert rc == 0, output
    assert report["passed"] is True
    assert report["identity"]["device_count"] >= 1
    assert all(d["uuid"].startswith("GPU-") for d in report["identity"]["devices"])
    assert checks.pop("nvidia_smi") is None  # skipped: no nvidia-smi given
    assert checks and all(ok is True for ok in checks.values()), checks
    assert len(report["cycles"]) == 2
    last = report["cycles"][-1]
    assert last["pods"], "the sim node's pods are attributed"
    assert any(d["processes"] for d in last["devices"])
    scrape = (tmp_path / "out" / "scrape-2.prom").read_text()
    assert all(d["uuid"] in scrape for d in report["identity"]["devices"])


def test_nvml_fault_and_wrong_uuid_fail_their_checks(tmp_path: Path) -> None:
    rc, report, output = run_check(
        tmp_path / "out",
        "--sim.inject",
        "nvmlDeviceGetPowerUsage=999",
        "--nvidia-smi",
        str(fake_smi(tmp_path)),
    )
    failed = {c["name"]: c["detail"] for c in report["checks"] if c["ok"] is False}
    assert rc == 1, output
    assert report["passed"] is False
    assert set(failed) == {"nvml_collectors", "nvidia_smi"}, failed
    assert "power" in failed["nvml_collectors"]
    assert "nvmlDeviceGetPowerUsage" in failed["nvml_collectors"]
    assert WRONG_UUID in failed["nvidia_smi"]
    assert "FAIL nvidia_smi" in output
