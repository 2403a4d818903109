"""`gpu-exporter --backend sim --sim.gpus 8 --sim.mig --sim.pods 256` (the scrape benchmark's node
size) starts as a process, and its scrape is whole and adds up: every pod has its per-pod series,
and per device the pods' memory is the device's and their utilization never exceeds it."""

from __future__ import annotations

import subprocess
import sys
import time
import urllib.request
from collections import defaultdict
from pathlib import Path

import pytest
from prometheus_client.parser import text_string_to_metric_families
from promserver import free_port, stop_process
from repo_paths import REPO

MIB = 1 << 20
POD_FAMILIES = (
    "gpu_pod_allocated",
    "gpu_pod_processes",
    "gpu_pod_memory_used_bytes",
    "gpu_pod_utilization_ratio",
)
Key = tuple[str, str | None]  # (UUID, GPU_I_ID): one GPU or one MIG instance


def _by_name(text: str) -> dict[str, list[tuple[dict[str, str], float]]]:
    out: dict[str, list[tuple[dict[str, str], float]]] = defaultdict(list)
    for family in text_string_to_metric_families(text):
        for s in family.samples:
            out[s.name].append((s.labels, s.value))
    return dict(out)


GIVE_UP_S = 300.0  # only a hung exporter takes this long, even on a busy machine


def ready(url: str, proc: subprocess.Popen[bytes], timeout: float = GIVE_UP_S) -> None:
    """Until every pod has a utilization sample (MIG instances need two GPM samples)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        assert proc.poll() is None, f"exporter exited with {proc.returncode}"
        try:
            samples = _by_name(urllib.request.urlopen(url, timeout=GIVE_UP_S).read().decode())
        except OSError:
            samples = {}
        if len(samples.get("gpu_pod_utilization_ratio", ())) >= 256:
            return
        time.sleep(0.5)
    raise AssertionError("not every pod got a utilization sample in time")


def device(labels: dict[str, str]) -> Key:
    return labels["UUID"], labels.get("GPU_I_ID")


@pytest.mark.slow
def test_the_benchmark_node_starts_from_the_command_line_and_adds_up(tmp_path: Path) -> None:
    port = free_port()
    argv = [sys.executable, "-m", "exporter", "--backend", "sim", "--sim.gpus", "8", "--sim.mig"]
    argv += ["--sim.pods", "256", f"--web.listen-address=127.0.0.1:{port}"]
    url = f"http://127.0.0.1:{port}/metrics"
    with (tmp_path / "exporter.log").open("wb") as log:
        proc = subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT, cwd=REPO)
        try:
            ready(url, proc)
            got = _by_name(urllib.request.urlopen(url, timeout=GIVE_UP_S).read().decode())
        finally:
            stop_process(proc)
    pods = {(lab["namespace"], lab["pod"]) for lab, _ in got["gpu_pod_allocated"]}
    assert len(pods) == 256
    for name in POD_FAMILIES:
        assert {(lab["namespace"], lab["pod"]) for lab, _ in got[name]} == pods, name
    assert all(v == 1 for _, v in got["gpu_pod_allocated"])

    pod_bytes: dict[Key, float] = defaultdict(float)
    pod_util: dict[Key, float] = defaultdict(float)
    for lab, v in got["gpu_pod_memory_used_bytes"]:
        pod_bytes[device(lab)] += v
    for lab, v in got["gpu_pod_utilization_ratio"]:
        pod_util[device(lab)] += v
    fb = {device(lab): v for lab, v in got["DCGM_FI_DEV_FB_USED"]}
    assert len({k for k in fb if k[1] is not None}) == 4 * 7  # --sim.mig: half the GPUs
    assert not {uuid for uuid, gi in fb if gi is not None} & {u for u, gi in fb if gi is None}
    assert set(pod_bytes) <= set(fb)
    for key, used_mib in fb.items():  # MiB rounded down per device, processes summed in bytes
        assert pod_bytes.get(key, 0.0) // MIB - used_mib in (0, 1), key
    busy = {device(lab): v for lab, v in got["DCGM_FI_DEV_GPU_UTIL"]}
    busy |= {
        device(lab): 100 * v for lab, v in got["DCGM_FI_PROF_GR_ENGINE_ACTIVE"] if "GPU_I_ID" in lab
    }
    for key, ratio in pod_util.items():  # pods sharing a device never add up to more than it
        assert ratio <= busy[key] / 100 + 0.011, key
