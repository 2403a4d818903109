"""`export-history` benchmark (not a test): a week of a 96-GPU cluster from a real Prometheus.

    .venv/bin/python bench/export_history_bench.py [--gpus 96] [--days 7] [--seed 0]

Writes `--days` of per-pod history for `--gpus` GPUs (8 per node; each GPU runs one pod after
another, 2 to 30 hours each, a quarter of them idle, each holding 1 to 30 GiB of the GPU's 80;
the devices' framebuffer series every minute) and kube-state-metrics' series for them
(each pod created 0 to 60 minutes before it started, Pending until then; one in 50 joined by a
one-GPU pod that waits two hours and is deleted without running) as OpenMetrics, backfills it with
`promtool tsdb create-blocks-from openmetrics`, starts /usr/bin/prometheus on loopback, then
runs `gpu-reclaimer export-history` as a subprocess against it and a cluster dump holding the
nodes and queues, and `gpu-reclaimer simulate` on the export, with its memory. Prints one JSON
object: the
Prometheus requests made, wall seconds and the peak RSS of each subprocess, and the export's
size. Needs a few minutes and about 1 GiB of disk for the TSDB.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import TextIO

import numpy as np
import yaml

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))
# the repo root before tests/: tests/reclaimer/ would otherwise shadow the reclaimer package
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from promserver import PROMTOOL, start_prometheus

import gpu_contract as gc

STEP = 60
GPUS_PER_NODE = 8
DEVICE_MIB = 80 * 1024


def _pods(gpus: int, start: int, end: int, rng: np.random.Generator) -> Iterator[tuple]:
    """(namespace, pod, node, gpu, first, last, level) for one pod after another on each GPU."""
    n = 0
    for g in range(gpus):
        t = start + STEP * int(rng.integers(0, 120))
        while t < end:
            last = min(end, t + STEP * int(rng.integers(120, 1800)))
            level = 0.0 if rng.random() < 0.25 else float(rng.uniform(0.2, 0.95))
            yield f"team-{n % 4}", f"job-{n}", f"node-{g // GPUS_PER_NODE}", g, t, last, level
            n += 1
            t = last + STEP * int(rng.integers(1, 60))


def write_history(path: Path, gpus: int, start: int, end: int, seed: int) -> int:
    """OpenMetrics for promtool, family by family; returns the number of pods."""
    rng = np.random.default_rng(seed)
    pods = list(_pods(gpus, start, end, rng))
    mib = rng.integers(1, 31, len(pods)) * 1024  # each pod's memory
    with path.open("w", encoding="utf-8") as out:
        for family in (gc.POD_UTILIZATION, gc.POD_ALLOCATED, gc.POD_MEMORY):
            out.write(f"# TYPE {family} gauge\n")
            for (ns, pod, node, g, first, last, level), held in zip(pods, mib, strict=True):
                lab = (
                    f'Hostname="{node}",UUID="GPU-{g}",container="main",gpu="{g % 8}",'
                    f'namespace="{ns}",pod="{pod}"'
                )
                times = np.arange(first, last + 1, STEP)
                noise = rng.normal(0.0, 0.05, len(times)) * (level > 0)
                values = np.clip(level + noise, 0.0, 1.0) if family == gc.POD_UTILIZATION else None
                constant = {gc.POD_ALLOCATED: 1, gc.POD_MEMORY: int(held) * 2**20}.get(family)
                for i, t in enumerate(times):
                    v = constant if values is None else round(float(values[i]), 3)
                    out.write(f"{family}{{{lab}}} {v} {t}\n")
        _framebuffer(out, gpus, start, end, pods, mib)
        out.write(f"# TYPE {gc.RECORDED_POD_QUEUE} gauge\n")
        for ns, pod, _, _, first, last, _ in pods:
            queue = "batch" if ns in ("team-0", "team-1") else "prod"
            lab = f'namespace="{ns}",pod="{pod}",queue="{queue}"'
            for t in range(first, last + 1, 900):
                out.write(f"{gc.RECORDED_POD_QUEUE}{{{lab}}} 1 {t}\n")
        _kube_state(out, pods, rng)
        out.write("# EOF\n")
    return len(pods)


def _framebuffer(
    out: TextIO, gpus: int, start: int, end: int, pods: list[tuple], mib: np.ndarray
) -> None:
    """Each device's DCGM_FI_DEV_FB_USED / _FB_FREE (MiB) every step: its pod's memory, or 0."""
    used = np.zeros((gpus, (end - start) // STEP + 1), dtype=np.int64)
    for (_, _, _, g, first, last, _), held in zip(pods, mib, strict=True):
        used[g, (first - start) // STEP : (last - start) // STEP + 1] = held
    for family in (gc.DCGM_FB_USED, gc.DCGM_FB_FREE):
        out.write(f"# TYPE {family} gauge\n")
        for g in range(gpus):
            lab = f'Hostname="node-{g // GPUS_PER_NODE}",UUID="GPU-{g}",gpu="{g % 8}"'
            for i, u in enumerate(used[g].tolist()):
                v = u if family == gc.DCGM_FB_USED else DEVICE_MIB - u
                out.write(f"{family}{{{lab}}} {v} {start + STEP * i}\n")


def _kube_state(out: TextIO, pods: list[tuple], rng: np.random.Generator) -> None:
    """kube_pod_created, GPU requests and the Pending phase, one sample a step while a pod lives."""
    lives = []
    for i, (ns, pod, _, _, first, last, _) in enumerate(pods):
        lives.append((ns, pod, first - STEP * int(rng.integers(0, 61)), first, last))
        if i % 50 == 0:
            lives.append((ns, f"wait-{i}", first, first + 7200, first + 7200))
    families = ("kube_pod_created", "kube_pod_container_resource_requests", "kube_pod_status_phase")
    for family in families:
        out.write(f"# TYPE {family} gauge\n")
        for ns, pod, created, started, ended in lives:
            lab = f'namespace="{ns}",pod="{pod}",uid="uid-{pod}"'
            if family == families[1]:
                lab += ',container="main",resource="nvidia_com_gpu",unit="integer"'
            elif family == families[2]:
                lab += ',phase="Pending"'
            for t in range(created, ended + 1, STEP):
                v = {families[0]: created, families[1]: 1, families[2]: int(t < started)}[family]
                out.write(f"{family}{{{lab}}} {v} {t}\n")


def cluster_dump(path: Path, gpus: int) -> None:
    nodes = [
        {
            "apiVersion": "v1",
            "kind": "Node",
            "metadata": {"name": f"node-{i}"},
            "status": {"capacity": {"nvidia.com/gpu": str(GPUS_PER_NODE)}},
        }
        for i in range(gpus // GPUS_PER_NODE)
    ]
    queues = [
        {
            "apiVersion": "scheduling.volcano.sh/v1beta1",
            "kind": "Queue",
            "metadata": {"name": name},
            "spec": {"weight": 1, "reclaimable": name == "batch"},
        }
        for name in ("batch", "prod")
    ]
    path.write_text(yaml.safe_dump({"apiVersion": "v1", "kind": "List", "items": nodes + queues}))


def timed(cmd: list[str], logs: Path) -> tuple[str, float, int]:
    """stdout, wall seconds and peak RSS (MiB, from wait4) of one subprocess."""
    out, err = logs.with_suffix(".out"), logs.with_suffix(".err")
    started = time.perf_counter()
    with out.open("w") as stdout, err.open("w") as stderr:
        proc = subprocess.Popen(cmd, stdout=stdout, stderr=stderr)
        _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - started
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode:
        raise SystemExit(f"{cmd[3]} failed ({proc.returncode}): {err.read_text()}")
    return out.read_text(), wall, usage.ru_maxrss // 1024


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--gpus", type=int, default=96)
    parser.add_argument("--days", type=float, default=7.0)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    end = int(time.time() // STEP * STEP) - 3 * 3600  # backfilled blocks end in the past
    start = end - int(args.days * 86400)
    with tempfile.TemporaryDirectory(prefix="export-bench-") as tmp:
        work = Path(tmp)
        t0 = time.perf_counter()
        pods = write_history(work / "history.om", args.gpus, start, end, args.seed)
        text_mib = (work / "history.om").stat().st_size / 2**20
        cluster_dump(work / "cluster.yaml", args.gpus)
        (work / "prom").mkdir()
        # promtool without the test helper's 2-minute limit: a week takes longer on 2 cores
        subprocess.run(
            [
                PROMTOOL,
                "tsdb",
                "create-blocks-from",
                "openmetrics",
                "-q",
                str(work / "history.om"),
                str(work / "prom" / "tsdb"),
            ],
            check=True,
        )
        (work / "history.om").unlink()
        with start_prometheus(work / "prom") as prom:
            setup = time.perf_counter() - t0
            since = f"{int((time.time() - start) // 60) + 1}m"
            cli = [sys.executable, "-m", "reclaimer"]
            out, export_s, export_rss = timed(
                [
                    *cli,
                    "export-history",
                    "--prometheus-url",
                    prom.url,
                    "--cluster-file",
                    str(work / "cluster.yaml"),
                    "--since",
                    since,
                    "--out",
                    str(work / "out"),
                ],
                work / "export",
            )
        summary = json.loads(out)
        files = work / "out"
        sim_out, sim_s, sim_rss = timed(
            [
                *cli,
                "simulate",
                "--pods",
                str(files / "pods.csv"),
                "--nodes",
                str(files / "nodes.csv"),
                "--utilization",
                str(files / "utilization.csv"),
                "--memory",
                str(files / "memory.csv"),
                "--capacity-scale",
                "1",
                "--strategy",
                "forecast",
                "--json",
                "--no-cold-start",
            ],
            work / "simulate",
        )
        result = json.loads(sim_out)
        print(
            json.dumps(
                {
                    "gpus": args.gpus,
                    "days": args.days,
                    "pods_backfilled": pods,
                    "openmetrics_mib": round(text_mib, 1),
                    "backfill_and_start_seconds": round(setup, 1),
                    "export_seconds": round(export_s, 2),
                    "export_peak_rss_mib": export_rss,
                    "prometheus_requests": summary["prometheus_requests"],
                    "exported_pods": summary["pods"],
                    "utilization_samples": summary["utilization_samples"],
                    "utilization_csv_mib": round(
                        (files / "utilization.csv").stat().st_size / 2**20, 1
                    ),
                    "memory_samples": summary["memory_samples"],
                    "memory_csv_mib": round((files / "memory.csv").stat().st_size / 2**20, 1),
                    "nodes_with_device_memory": summary["nodes_with_device_memory"],
                    "queue_from": summary["queue_from"],
                    "arrivals_from_kube_pod_created": summary["arrivals_from_kube_pod_created"],
                    "never_ran_pods": summary["never_ran_pods"],
                    "simulate_seconds": round(sim_s, 2),
                    "simulate_peak_rss_mib": sim_rss,
                    "own_utilization_jobs": result["own_utilization_jobs"],
                    "preemptions": result["preemptions"],
                    "memory_replay": result["memory_replay"],
                    "oom_kills": result["oom_kills"],
                },
                indent=2,
            )
        )


if __name__ == "__main__":
    main()
