"""CPU cost of `--collectors`: sim exporters run side by side, the default and a minimal file.

Usage: python bench/collectors_bench.py [--duration 90] [--interval 1] [--mig 8] [--before SRC]

Starts `gpu-exporter` processes at the same time on the same node (`--backend sim --sim.gpus 8
--sim.mig 8 --sim.pods 256 --collect-interval 1`; `--mig` MIG-enables fewer of the GPUs): one
with every family (no `--collectors`) and one with a counters file choosing only `MINIMAL`. Once
all are ready, their CPU seconds (`/proc/<pid>/stat` utime + stime) are taken over `--duration`
seconds; nothing scrapes them in between, so the cost is the collect cycle's (NVML emulator
included) and rendering's. `--before SRC` adds a third process, the same minimal file run from
another checkout of the exporter (e.g. `git archive` of a commit before it left out reads: then
`--collectors` trims only what is rendered). At the end each is scraped once to check what it
serves, and the NVML calls one collect cycle makes are counted in process (the emulator's
`SimNvml.calls`, after a first cycle). Prints one JSON object.
"""

from __future__ import annotations

import argparse
import http.client
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from exporter_bench import free_port, get, proc_stat, wait_ready  # bench/ is on sys.path
from prometheus_client.parser import text_string_to_metric_families

from exporter.sim.backend import build_sim_backend

REPO = Path(__file__).resolve().parent.parent
NODE = ["--backend", "sim", "--sim.gpus", "8", "--sim.pods", "256"]
MINIMAL = ("DCGM_FI_DEV_GPU_UTIL", "gauge"), ("DCGM_FI_DEV_FB_USED", "gauge")


def counters_file(directory: Path) -> Path:
    path = directory / "minimal-counters.csv"
    path.write_text("".join(f"{name}, {kind}, chosen\n" for name, kind in MINIMAL))
    return path


def start(src: Path, extra: list[str], interval: float) -> tuple[subprocess.Popen[bytes], int]:
    port = free_port()
    args = [sys.executable, "-m", "exporter", *NODE, "--collect-interval", str(interval), *extra]
    args += ["--web.listen-address", f"127.0.0.1:{port}", "--log.level", "error"]
    return subprocess.Popen(args, cwd=src), port


def calls_per_cycle(mig: int, families: frozenset[str] | None) -> int:
    """The NVML calls of one sweep of the bench's node (the second: GPM needs a first)."""
    with tempfile.TemporaryDirectory() as tmp:
        parts, node = build_sim_backend(
            gpus=8,
            mig=mig,
            pods=256,
            seed=1,
            workloads_file=None,
            fixture_dir=Path(tmp),
            node_name="bench",
        )
        parts.devices.watch(families)
        parts.devices.read()
        before = sum(node.lib.calls.values())
        parts.devices.read()
        parts.devices.close()
        return sum(node.lib.calls.values()) - before


def dcgm_families(port: int) -> list[str]:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    status, body = get(conn, "/metrics")
    conn.close()
    assert status == 200, status
    names = {f.name for f in text_string_to_metric_families(body.decode())}
    return sorted(n for n in names if n.startswith("DCGM_FI_"))


def run(duration: float, interval: float, mig: int, before: Path | None) -> dict[str, object]:
    with tempfile.TemporaryDirectory() as tmp:
        node = ["--sim.mig", str(mig)]
        minimal = [*node, "--collectors", str(counters_file(Path(tmp)))]
        variants = {"default": (REPO, node), "minimal": (REPO, minimal)}
        if before is not None:
            variants["minimal_before"] = (before, minimal)
        procs = {name: start(src, extra, interval) for name, (src, extra) in variants.items()}
        try:
            for _proc, port in procs.values():
                factory = lambda p=port: http.client.HTTPConnection("127.0.0.1", p, timeout=30)  # noqa: E731
                wait_ready(factory, time.monotonic() + 120)
            cpu0 = {name: proc_stat(proc.pid)[0] for name, (proc, _port) in procs.items()}
            time.sleep(duration)
            cpu1 = {name: proc_stat(proc.pid)[0] for name, (proc, _port) in procs.items()}
            served = {name: dcgm_families(port) for name, (_proc, port) in procs.items()}
        finally:
            for proc, _port in procs.values():
                proc.terminate()
                proc.wait(timeout=30)
    per_s = {name: round((cpu1[name] - cpu0[name]) / duration, 4) for name in procs}
    return {
        "node": " ".join([*NODE, "--sim.mig", str(mig)]),
        "collect_interval_s": interval,
        "duration_s": duration,
        "minimal_families": [name for name, _kind in MINIMAL],
        "cpu_s_per_s": per_s,
        "default_over_minimal": round(per_s["default"] / per_s["minimal"], 2),
        "nvml_calls_per_cycle": {
            "default": calls_per_cycle(mig, None),
            "minimal": calls_per_cycle(mig, frozenset(name for name, _kind in MINIMAL)),
        },
        "dcgm_families_served": {name: len(names) for name, names in served.items()},
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--duration", type=float, default=90.0)
    parser.add_argument("--interval", type=float, default=1.0)
    parser.add_argument("--mig", type=int, default=8, help="MIG-enabled GPUs of the 8")
    parser.add_argument("--before", type=Path, help="another checkout, run with the minimal file")
    args = parser.parse_args()
    print(json.dumps(run(args.duration, args.interval, args.mig, args.before), indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
