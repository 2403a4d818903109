"""Exporter benchmark (not a test): scrape latency vs prometheus_client, CPU, and RSS over a run.

    .venv/bin/python bench/exporter_bench.py [--duration 600] [--requests 2000]

Starts the exporter as `gpu-exporter --backend sim --sim.gpus 8 --sim.mig 8 --sim.pods 256
--sim.seed 1` in a child process (`SERVE`, the command line anyone can run): 8 H100s x 7 MIG
instances with 256 pods, 4-5 time-sliced pods per MIG instance (`MIG-<uuid>::<n>`, each with one
process), read through the real NVML code path (`NvmlSource` over the NVML emulator), attributed
through the real fixture files and /proc cgroup files, served by the real aiohttp app. Then, side
by side in one run:

1. scrape latency over loopback (keep-alive, sequential; gzip as Prometheus asks, and plain),
2. `prometheus_client.generate_latest` of the same families (a registry whose custom collector
   yields the families parsed from the exporter's own output) in this process,
3. the exporter's CPU seconds per wall second while collecting every 1 s and scraped every 1 s,
4. its RSS every second over `--duration` seconds: peak, and growth (last minute vs first).

The child's CPU includes the NVML emulator, which on a real node is the driver's work.
"""

from __future__ import annotations

import argparse
import gzip
import http.client
import os
import socket
import statistics
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.parser import text_string_to_metric_families

REPO = Path(__file__).resolve().parent.parent

GPUS, PODS, SEED = 8, 256, 1
SERVE = ["--backend", "sim", "--sim.gpus", str(GPUS), "--sim.mig", str(GPUS)]
SERVE += ["--sim.pods", str(PODS), "--sim.seed", str(SEED)]


# --- measuring (parent) ------------------------------------------------------------------------


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def get(conn: http.client.HTTPConnection, path: str, gz: bool = False) -> tuple[int, bytes]:
    conn.request("GET", path, headers={"Accept-Encoding": "gzip" if gz else "identity"})
    r = conn.getresponse()
    return r.status, r.read()


def proc_stat(pid: int) -> tuple[float, int]:
    """(CPU seconds, RSS bytes) of a process."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    cpu = (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    rss = int(fields[21]) * os.sysconf("SC_PAGE_SIZE")
    return cpu, rss


def latencies(
    conn: http.client.HTTPConnection, n: int, gz: bool, path: str = "/metrics"
) -> list[float]:
    out = []
    for _ in range(n):
        t = time.perf_counter()
        status, _ = get(conn, path, gz)
        out.append(time.perf_counter() - t)
        assert status == 200
    return out


def pct(values: list[float], q: int) -> float:
    return (
        statistics.quantiles(values, n=100, method="inclusive")[q - 1] if q < 100 else max(values)
    )


def client_python_latency(text: str, n: int) -> tuple[list[float], int]:

    families = list(text_string_to_metric_families(text))

    class Same:
        def collect(self) -> Iterator[Any]:
            yield from families

    registry = CollectorRegistry()
    registry.register(Same())
    out = []
    for _ in range(n):
        t = time.perf_counter()
        generate_latest(registry)
        out.append(time.perf_counter() - t)
    return out, sum(len(f.samples) for f in families)


def wait_ready(conn_factory: Any, deadline: float) -> None:
    while time.monotonic() < deadline:
        try:
            conn = conn_factory()
            if get(conn, "/readyz")[0] == 200:
                conn.close()
                return
            conn.close()
        except OSError:
            pass
        time.sleep(0.2)
    raise SystemExit("exporter did not become ready")


def soak(pid: int, conn: http.client.HTTPConnection, duration: float) -> tuple[float, list[int]]:
    cpu0, _ = proc_stat(pid)
    wall0 = time.monotonic()
    rss = []
    while time.monotonic() - wall0 < duration:
        get(conn, "/metrics", gz=True)  # a scrape every second, as a busy Prometheus would
        rss.append(proc_stat(pid)[1])
        time.sleep(max(0.0, 1.0 - (time.monotonic() - wall0) % 1.0))
    cpu1, _ = proc_stat(pid)
    return (cpu1 - cpu0) / (time.monotonic() - wall0), rss


def run(duration: float, requests: int, interval: float) -> None:
    port = free_port()
    listen = f"--web.listen-address=127.0.0.1:{port}"
    child = subprocess.Popen(
        [sys.executable, "-m", "exporter", *SERVE, listen, f"--collect-interval={interval}"],
        cwd=REPO,
        stderr=subprocess.DEVNULL,
    )
    try:

        def factory() -> http.client.HTTPConnection:
            return http.client.HTTPConnection("127.0.0.1", port, timeout=10)

        wait_ready(factory, time.monotonic() + 60)
        time.sleep(2.5 * min(interval, 2.0))  # a few cycles: process samples, GPM deltas
        conn = factory()
        _, body = get(conn, "/metrics")
        text = body.decode()
        _, zipped = get(conn, "/metrics", gz=True)
        assert gzip.decompress(zipped).count(b"\n") > 0
        scrapes = {
            "/metrics gzip": latencies(conn, requests, gz=True),
            "/metrics plain": latencies(conn, requests, gz=False),
            "/healthz (floor)": latencies(conn, requests, gz=False, path="/healthz"),
        }
        ref, samples = client_python_latency(text, max(20, requests // 20))
        cpu, rss = soak(child.pid, conn, duration)
        conn.close()
        hwm = (
            int(Path(f"/proc/{child.pid}/status").read_text().split("VmHWM:")[1].split()[0]) * 1024
        )
    finally:
        child.terminate()
        child.wait(timeout=30)
    report(text, samples, len(zipped), scrapes, ref, cpu, rss, hwm, duration, interval)


def report(
    text: str,
    samples: int,
    zipped: int,
    scrapes: dict[str, list[float]],
    ref: list[float],
    cpu: float,
    rss: list[int],
    hwm: int,
    duration: float,
    interval: float,
) -> None:
    ms = 1000.0
    gz = scrapes["/metrics gzip"]
    minute = min(60, max(1, len(rss) // 4))
    first, last = statistics.median(rss[:minute]), statistics.median(rss[-minute:])
    size = f"{samples} samples, {len(text)} B ({zipped} B gzip)"
    rows = [("node", f"{GPUS} GPUs x 7 MIG, {PODS} pods; {size}")]
    for kind, values in scrapes.items():
        p50, p99 = pct(values, 50) * ms, pct(values, 99) * ms
        rows.append((f"exporter scrape {kind} (p50 / p99)", f"{p50:.3f} / {p99:.3f} ms"))
    ref50, ref99 = pct(ref, 50), pct(ref, 99)
    rows += [
        (
            "prometheus_client generate_latest (p50 / p99)",
            f"{ref50 * ms:.2f} / {ref99 * ms:.2f} ms",
        ),
        (
            "generate_latest / gzip scrape (p50 / p99)",
            f"{ref50 / pct(gz, 50):.0f}x / {ref99 / pct(gz, 99):.0f}x",
        ),
        (f"exporter CPU per wall second (collect {interval:g} s, scrape 1 s)", f"{cpu:.3f} s/s"),
        (f"RSS over {duration:.0f} s: peak (VmHWM)", f"{hwm / 2**20:.1f} MiB"),
        ("RSS first vs last minute (median)", f"{first / 2**20:.1f} -> {last / 2**20:.1f} MiB"),
        ("1-minute load average at the end", f"{os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs"),
    ]
    width = max(len(r[0]) for r in rows)
    print(f"\n{'measure'.ljust(width)} | value\n{'-' * width}-+-{'-' * 40}")
    for name, value in rows:
        print(f"{name.ljust(width)} | {value}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--duration", type=float, default=600.0, help="soak seconds (default 600)")
    parser.add_argument("--requests", type=int, default=2000, help="scrapes per latency series")
    parser.add_argument(
        "--collect-interval", type=float, default=1.0, help="the exporter's (default 1 s)"
    )
    args = parser.parse_args()
    run(args.duration, args.requests, args.collect_interval)
    return 0


if __name__ == "__main__":
    sys.exit(main())
