"""The CLI's answers to bad input, and a real run on the sim backend."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
import urllib.request
from contextlib import ExitStack
from pathlib import Path

import pytest
from exporter_fakes import ScriptedDevices
from promserver import free_port
from repo_paths import REPO

from exporter.cli import attribution_sources, build_parser, main
from exporter.config import load_config
from exporter.node.podresources import AllocationsFile, PodResourcesClient
from exporter.node.pods import KubernetesPods, PodsFile
from exporter.sources import BackendParts, DeviceSweep


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        pytest.param(["--no-such-flag"], "unrecognized arguments", id="unknown-flag"),
        pytest.param(["--backend", "cuda"], "--backend=cuda: must be one of", id="bad-backend"),
        pytest.param(["--collect-interval", "0"], "positive", id="bad-interval"),
        pytest.param(["--web.listen-address", ":99999"], "out of range", id="bad-port"),
        pytest.param(["--backend", "replay"], "needs --replay.file", id="replay-without-file"),
        pytest.param(
            ["--backend", "sim", "--sim.fault", "nvmlDeviceGetPowerUsage"],
            "--sim.fault=nvmlDeviceGetPowerUsage: expected CALL:GPU",
            id="fault-without-gpu",
        ),
        pytest.param(
            ["--backend", "sim", "--sim.fault", "GetPowerUsage:0"],
            "neither a pynvml function name",
            id="fault-not-a-pynvml-name",
        ),
        pytest.param(
            ["--backend", "sim", "--sim.gpus", "2", "--sim.fault", "lost:5"],
            "GPU 5 does not exist (--sim.gpus is 2)",
            id="fault-on-a-missing-gpu",
        ),
        pytest.param(
            ["--backend", "sim", "--sim.fault", "lost:x"],
            "GPU 'x' is not a GPU index",
            id="fault-gpu-not-a-number",
        ),
        pytest.param(["--sim.fault", "lost:0"], "only used with --backend=sim", id="fault-nvml"),
        pytest.param(
            ["--backend", "sim", "--sim.fault", "nvmlDeviceGetWarpDrive:0"],
            "cannot start the sim backend: --sim.fault nvmlDeviceGetWarpDrive: the NVML "
            "emulator has no such function",
            id="fault-unknown-function",
        ),
        pytest.param(
            ["--backend", "sim", "--sim.fault", "nvmlDeviceGetPowerUsage:0:Oops"],
            "--sim.fault Oops: not an NVML error",
            id="fault-unknown-error",
        ),
    ],
)
def test_bad_input_exits_2_with_a_clear_message(
    argv: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert message in err


GIVE_UP_S = 120.0  # only a hung exporter takes this long, even on a busy machine


def fetch(url: str) -> tuple[int, bytes]:
    try:
        with urllib.request.urlopen(url, timeout=GIVE_UP_S) as r:
            return r.status, r.read()
    except urllib.error.HTTPError as e:
        return e.code, b""


@pytest.mark.slow
def test_python_m_exporter_serves_the_sim_and_stops_cleanly_on_sigterm(tmp_path: Path) -> None:
    port = free_port()
    argv = [sys.executable, "-m", "exporter", "--backend", "sim", "--sim.gpus", "2"]
    argv += ["--sim.pods", "5", "--web.listen-address", f"127.0.0.1:{port}"]
    env = {**os.environ, "NODE_NAME": "node-x"}
    proc = subprocess.Popen(argv, cwd=REPO, env=env, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + GIVE_UP_S
        status = 0
        while time.monotonic() < deadline and status != 200:
            with contextlib.suppress(OSError):  # not listening yet
                status, _ = fetch(f"http://127.0.0.1:{port}/readyz")
            time.sleep(0.1)
        _, body = fetch(f"http://127.0.0.1:{port}/metrics")
        proc.send_signal(signal.SIGTERM)
        code = proc.wait(timeout=GIVE_UP_S)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert status == 200 and code == 0
    assert b'Hostname="node-x"' in body and b"gpu_pod_allocated{" in body


@pytest.mark.parametrize(
    ("argv", "fixtures", "allocations", "pods"),
    [
        pytest.param("", False, PodResourcesClient, KubernetesPods, id="a-real-node"),
        pytest.param("--no-collector.kubernetes", False, PodResourcesClient, None, id="no-api"),
        pytest.param("--no-collector.pods", False, None, None, id="no-attribution"),
        pytest.param("", True, AllocationsFile, PodsFile, id="sim-fixtures"),
    ],
)
def test_attribution_reads_the_kubelet_and_the_api_or_the_fixtures_as_flagged(
    tmp_path: Path, argv: str, fixtures: bool, allocations: type | None, pods: type | None
) -> None:
    config = load_config(vars(build_parser().parse_args(argv.split())), {}, "h")
    parts = BackendParts(
        ScriptedDevices(lambda: DeviceSweep(())),
        tmp_path,
        tmp_path / "podresources.json" if fixtures else None,
        tmp_path / "pods.json" if fixtures else None,
    )
    with ExitStack() as stack:
        sources = attribution_sources(config, parts, stack)
        if allocations is None:
            assert sources is None
            return
        assert sources is not None and sources.proc_root == tmp_path
        assert type(sources.allocations) is allocations
        assert (type(sources.pods) if sources.pods is not None else None) is pods
