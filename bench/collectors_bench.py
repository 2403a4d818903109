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
`SimNvml.calls`, after a first cycle) and the CPU of the NVML sweep alone is timed in process,
default and minimal interleaved on one emulated clock (`--sweeps` of each; the median), which the
other jobs on a shared machine disturb far less than the side-by-side processes. Prints one JSON
object.
"""

from __future__ import annotations

import argparse
import http.client
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

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


def sim_source(tmp: Path, mig: int, families: frozenset[str] | None, now: list[float]) -> Any:
    """The bench's node read through `NvmlSource` on the emulated clock `now[0]`."""
    parts, node = build_sim_backend(
        gpus=8,
        mig=mig,
        pods=256,
        seed=1,
        workloads_file=None,
        fixture_dir=tmp,
        node_name="bench",
        clock=lambda: now[0],
    )
    parts.devices.watch(families)
    return parts.devices, node.lib


def sweeps(mig: int, count: int) -> dict[str, object]:
    """NVML calls of one sweep (after a first) and median sweep CPU ms, default vs minimal."""
    chosen = {"default": None, "minimal": frozenset(name for name, _kind in MINIMAL)}
    now = [1_700_000_000.0]
    with tempfile.TemporaryDirectory() as tmp:
        built = {k: sim_source(Path(tmp) / k, mig, f, now) for k, f in chosen.items()}
        cpu: dict[str, list[float]] = {k: [] for k in built}
        calls: dict[str, int] = {}
        for i in range(count + 1):
            now[0] += 1.0
            for name in sorted(built, reverse=i % 2 == 1):  # alternate which goes first
                source, lib = built[name]
                before, t = sum(lib.calls.values()), time.process_time()
                source.read()
                cpu[name].append(time.process_time() - t)
                calls[name] = sum(lib.calls.values()) - before
        for source, _lib in built.values():
            source.close()
    ms = {k: round(statistics.median(v[1:]) * 1000, 2) for k, v in cpu.items()}
    return {
        "nvml_calls_per_cycle": calls,
        "sweep_cpu_ms_median": ms,
        "sweep_default_over_minimal": round(ms["default"] / ms["minimal"], 2),
    }


def dcgm_families(port: int) -> list[str]:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    status, body = get(conn, "/metrics")
    conn.close()
    assert status == 200, status
    names = {f.name for f in text_string_to_metric_families(body.decode())}
    return sorted(n for n in names if n.startswith("DCGM_FI_"))


def run(
    duration: float, interval: float, mig: int, before: Path | None, sweep_count: int
) -> dict[str, object]:
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
        **sweeps(mig, sweep_count),
        "dcgm_families_served": {name: len(names) for name, names in served.items()},
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--duration", type=float, default=90.0)
    parser.add_argument("--interval", type=float, default=1.0)
    parser.add_argument("--mig", type=int, default=8, help="MIG-enabled GPUs of the 8")
    parser.add_argument("--sweeps", type=int, default=100, help="in-process sweeps of each")
    parser.add_argument("--before", type=Path, help="another checkout, run with the minimal file")
    args = parser.parse_args()
    print(
        json.dumps(run(args.duration, args.interval, args.mig, args.before, args.sweeps), indent=2)
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
