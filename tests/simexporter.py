"""Run `gpu-exporter --backend sim` as a real process for integration tests.

The example nodes' pods come from `deploy/examples/sim/<node>.workloads.yaml`, named after the
example jobs. The context manager waits until the exporter serves per-pod series, yields its
`host:port`, and always stops the process.
"""

from __future__ import annotations

import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from promserver import free_port, stop_process

REPO = Path(__file__).resolve().parent.parent
SIM_WORKLOADS = REPO / "deploy" / "examples" / "sim"
EXAMPLE_NODES = {"gpu-node-1": 4, "gpu-node-2": 1}  # as sim/cluster-state.yaml declares them


def _serves_pods(url: str, timeout: float) -> bool:
    try:
        with urllib.request.urlopen(url + "/metrics", timeout=timeout) as r:
            return b"gpu_pod_allocated" in r.read()
    except OSError:  # not listening yet
        return False


@contextmanager
def sim_exporter(workdir: Path, node: str, gpus: int, timeout: float = 300.0) -> Iterator[str]:
    """A sim exporter for `node` until the block ends; `timeout` only gives up on a hung one."""
    port = free_port()
    args = [
        sys.executable,
        "-m",
        "exporter",
        "--backend",
        "sim",
        f"--web.listen-address=127.0.0.1:{port}",
        f"--node-name={node}",
        f"--sim.gpus={gpus}",
        f"--sim.workloads={SIM_WORKLOADS / f'{node}.workloads.yaml'}",
        "--collect-interval=1",
    ]
    with (workdir / f"exporter-{node}.log").open("wb") as log:
        proc = subprocess.Popen(args, stdout=log, stderr=subprocess.STDOUT, cwd=REPO)
        try:
            deadline = time.monotonic() + timeout
            while not _serves_pods(f"http://127.0.0.1:{port}", timeout):
                if proc.poll() is not None:
                    raise RuntimeError(f"exporter {node} exited with {proc.returncode}")
                if time.monotonic() > deadline:
                    raise RuntimeError(f"exporter {node} not ready after {timeout}s")
                time.sleep(0.3)
            yield f"127.0.0.1:{port}"
        finally:
            stop_process(proc)
