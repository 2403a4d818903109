"""Unknown is not idle: a device whose readings cannot be had gives its pods no utilization or
memory sample (absent, never 0; `gpu_pod_allocated` stays) and shows in the self-metrics.

Through the sim backend as the CLI builds it (`--sim.fault`), the real `NvmlSource`, the
collect loop and the renderer; and once through a running `python -m exporter`."""

from __future__ import annotations

import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest
from exporter_fakes import Clock
from prometheus_client.parser import text_string_to_metric_families
from promserver import free_port, stop_process
from repo_paths import REPO

from exporter.config import load_config
from exporter.cycle import AttributionSources, CollectLoop
from exporter.node.podresources import AllocationsFile
from exporter.node.pods import PodsFile
from exporter.sim.backend import SimNode, sim_backend_for

T0 = 1_700_000_000.0
Samples = dict[str, dict[tuple[str, str], float]]  # family -> (pod or label, gpu) -> value


def parse(text: str) -> Samples:
    out: Samples = {}
    for family in text_string_to_metric_families(text):
        for s in family.samples:
            key = s.labels.get("pod") or s.labels.get("call") or s.labels.get("collector") or ""
            out.setdefault(s.name, {})[(key, s.labels.get("gpu", ""))] = s.value
    return out


def sim_collector(tmp: Path, *faults: str) -> tuple[CollectLoop, SimNode, Clock]:
    raw = {"backend": "sim", "sim_gpus": "3", "sim_pods": "8", "sim_faults": list(faults)}
    config = load_config(raw, {}, "sim-node")
    clock = Clock(T0)
    parts, node = sim_backend_for(config, tmp, clock)
    assert parts.podresources_file is not None and parts.pods_file is not None
    sources = AttributionSources(
        AllocationsFile(parts.podresources_file), PodsFile(parts.pods_file), parts.proc_root
    )
    return CollectLoop(parts.devices, sources, hostname="sim-node", clock=clock), node, clock


def pods_on(node: SimNode, gpu: int) -> set[str]:
    return {node.pods[p.pod].spec.pod for p in node.placed if p.gpu == gpu}


@pytest.mark.parametrize(
    ("fault", "call", "memory_known"),
    [
        pytest.param(
            "nvmlDeviceGetComputeRunningProcesses:0",
            "nvmlDeviceGetComputeRunningProcesses",
            False,
            id="process-list-fails",
        ),
        pytest.param(
            "nvmlDeviceGetMPSComputeRunningProcesses:0",
            "nvmlDeviceGetMPSComputeRunningProcesses",
            False,
            id="mps-list-fails",
        ),
        pytest.param(
            "nvmlDeviceGetProcessUtilization:0",
            "nvmlDeviceGetProcessUtilization",
            True,
            id="utilization-fails",
        ),
        pytest.param("lost:0", "nvmlDeviceGetHandleByIndex", False, id="gpu-lost"),
    ],
)
def test_pods_on_a_failing_gpu_have_no_usage_samples(
    tmp_path: Path, fault: str, call: str, memory_known: bool
) -> None:
    loop, node, clock = sim_collector(tmp_path, fault)
    loop.collect_once()
    for _ in range(3):
        clock.now += 5
        got = parse(loop.collect_once().exposition.body.decode())
        failing, others = pods_on(node, 0), pods_on(node, 1) | pods_on(node, 2)
        assert failing and others
        for pod in failing:
            assert got["gpu_pod_allocated"][(pod, "0")] == 1
            assert (pod, "0") not in got.get("gpu_pod_utilization_ratio", {})
            assert ((pod, "0") in got.get("gpu_pod_memory_used_bytes", {})) is memory_known
        for pod in others:  # the other GPUs' pods are measured as before
            gpu = next(g for (p, g) in got["gpu_pod_allocated"] if p == pod)
            assert (pod, gpu) in got["gpu_pod_utilization_ratio"]
        assert got["gpu_exporter_collector_success"][("processes", "")] == 0
        assert got["gpu_exporter_errors_total"][(call, "")] >= 1


def test_the_failing_gpu_recovers_when_the_fault_is_gone(tmp_path: Path) -> None:
    loop, node, clock = sim_collector(tmp_path, "nvmlDeviceGetProcessUtilization:0")
    loop.collect_once()
    node.lib.clear_faults()
    clock.now += 5
    got = parse(loop.collect_once().exposition.body.decode())
    assert all((pod, "0") in got["gpu_pod_utilization_ratio"] for pod in pods_on(node, 0))
    assert got["gpu_exporter_collector_success"][("processes", "")] == 1


GIVE_UP_S = 120.0  # only a hung exporter takes this long, even on a busy machine


def fetch(url: str) -> tuple[int, str]:
    try:
        with urllib.request.urlopen(url, timeout=GIVE_UP_S) as r:
            return r.status, r.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode()


@pytest.mark.slow
def test_a_running_exporter_rehearses_faults_from_the_command_line(tmp_path: Path) -> None:
    """`--sim.fault` on the CLI: a failing process list on GPU 0, GPU 1 lost, a wedged call on
    GPU 2 (after the first cycle): pods absent from the usage families, /healthz failing."""
    port = free_port()
    argv = [sys.executable, "-m", "exporter", "--backend", "sim", "--sim.gpus", "3"]
    argv += ["--sim.pods", "8", "--collect-interval", "0.3"]
    argv += ["--web.listen-address", f"127.0.0.1:{port}"]
    argv += ["--sim.fault", "nvmlDeviceGetComputeRunningProcesses:0", "--sim.fault", "lost:1"]
    base = f"http://127.0.0.1:{port}"
    log = (tmp_path / "exporter.log").open("w")
    proc = subprocess.Popen(argv, cwd=REPO, stdout=log, stderr=subprocess.STDOUT)
    try:
        body = wait_for(base, lambda b: "nvmlDeviceGetHandleByIndex" in b)
        health = until_health(base, 200)  # alive: its cycles complete, faults and all
    finally:
        stop_process(proc)
    got = parse(body)
    allocated = got["gpu_pod_allocated"]
    usage = got.get("gpu_pod_utilization_ratio", {})
    for gpu in ("0", "1"):
        held = [pod for (pod, g) in allocated if g == gpu]
        assert held and not [pod for pod in held if (pod, gpu) in usage]
    assert any(g == "2" for (_, g) in usage)
    assert got["gpu_exporter_collector_success"][("processes", "")] == 0
    assert got["gpu_exporter_errors_total"][("nvmlDeviceGetComputeRunningProcesses", "")] >= 1
    assert health == "ok\n"


@pytest.mark.slow
def test_a_wedged_driver_call_fails_healthz(tmp_path: Path) -> None:
    port = free_port()
    argv = [sys.executable, "-m", "exporter", "--backend", "sim", "--sim.gpus", "2"]
    argv += ["--sim.pods", "4", "--collect-interval", "0.2"]
    argv += ["--web.listen-address", f"127.0.0.1:{port}"]
    argv += ["--sim.fault", "nvmlDeviceGetPowerUsage:1:hang"]
    base = f"http://127.0.0.1:{port}"
    proc = subprocess.Popen(argv, cwd=REPO, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        wait_for(base, lambda b: "gpu_pod_allocated" in b)
        reason = until_health(base, 503)  # the call into GPU 1 never returns
        ready, _ = fetch(base + "/readyz")
        proc.terminate()
        code = proc.wait(timeout=GIVE_UP_S)  # the stuck call does not keep the process alive
    finally:
        stop_process(proc)
    assert "collect cycle completed" in reason
    assert ready == 503 and code == 0


def until_health(base: str, status: int) -> str:
    """/healthz's body once it answers `status` (polled: the exporter runs at its own pace)."""
    deadline = time.monotonic() + GIVE_UP_S
    while True:
        got, body = fetch(base + "/healthz")
        if got == status:
            return body
        assert time.monotonic() < deadline, f"/healthz still answers {got}: {body}"
        time.sleep(0.2)


def wait_for(base: str, ok: object, timeout: float = GIVE_UP_S) -> str:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            status, body = fetch(base + "/metrics")
        except OSError:
            status, body = 0, ""
        if status == 200 and callable(ok) and ok(body):
            return body
        time.sleep(0.2)
    raise AssertionError(f"{base} never served what was waited for")
