"""scripts/gpu_check.py end to end on the emulator: the real exporter collector, CLI and promtool.

The passing run must find the emulated GPUs and pass every check, the load's numbers and
nvidia-smi's included (a fake one that builds the same emulated node, scripted load and all, and
reads it through NVML calls). The failing run breaks two things at once, an NVML call through the
emulator's fault injection and the fake nvidia-smi reporting a UUID no GPU has, and exactly those
two checks must fail, with exit status 1. A Python without the packages still gets its report.
Each check on literal inputs is in test_gpu_check_parts.py (the lastSeenTimeStamp experiment in
test_gpu_check_window.py).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from repo_paths import REPO

sys.path.insert(0, str(REPO / "scripts"))
from gpu_check_window import LOOKBACK_S, WINDOW

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
