"""`gpu-reclaimer export-history`: the user's own cluster history as a trace `simulate` replays.

Reads the cluster (the API server through `--kubeconfig`, or a `--cluster-file` dump, as `run`
does), then `--since` of per-pod GPU history from Prometheus in chunks
(`reclaimer.prometheus.window_read`), and writes `pods.csv`, `nodes.csv`, `utilization.csv` and,
from the exporter's per-pod memory, `memory.csv` into `--out` (`reclaimer.simulate.export` says
what each holds), with each pod's arrival and the pods that waited for GPUs and never ran from
kube-state-metrics (`reclaimer.prometheus.arrivals`).
Prints a JSON summary on stdout and a progress bar on stderr when stderr is a terminal.

Exit 2 for a bad flag (duration, credentials, kubeconfig, a dump that cannot be read, an `--out`
that cannot be written), before Prometheus is contacted; exit 1 when the cluster or Prometheus
cannot be read or holds no per-pod GPU series in the window.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import tempfile
import time
from pathlib import Path

from reclaimer.commands.prometheus_flags import add_prometheus_arguments, prometheus_credentials
from reclaimer.commands.simulate import ProgressBar
from reclaimer.kube.client import KubeConfigError, build_api
from reclaimer.kube.dumps import ClusterFileError, load_cluster_file
from reclaimer.kube.read import ClusterReadError, read_cluster_sync
from reclaimer.model import ClusterView
from reclaimer.prometheus.auth import CredentialError, Credentials
from reclaimer.prometheus.client import PromClient, RetryPolicy
from reclaimer.prometheus.history import MetricsSource
from reclaimer.prometheus.window import WindowRead
from reclaimer.prometheus.window_read import WindowUnavailable, read_window
from reclaimer.simulate.export import Export, build_export, write_export
from reclaimer.units import parse_duration

PROG = "gpu-reclaimer export-history"
# A week-long instant query (GPUs per pod) or a day of every pod is slower than a cycle's reads.
RETRY = RetryPolicy(timeout=120.0)


class Refused(Exception):
    """Why the export stops, and its exit code."""

    def __init__(self, message: str, code: int) -> None:
        super().__init__(message)
        self.code = code


def add_arguments(p: argparse.ArgumentParser) -> None:
    add_prometheus_arguments(p)
    where = p.add_mutually_exclusive_group(required=True)
    where.add_argument("--kubeconfig", help="read the cluster from the API server")
    where.add_argument("--cluster-file", metavar="DUMP.yaml", help="read a kubectl dump")
    p.add_argument("--since", default="7d", help="history to export, up to now (default 7d)")
    p.add_argument("--step", default="60s", help="sample spacing (default 60s)")
    p.add_argument(
        "--metrics-source",
        choices=[s.value for s in MetricsSource],
        default=MetricsSource.GPU_RECLAIM.value,
        help="gpu-reclaim exporter's per-pod metrics, or dcgm-exporter's pod-labelled GPU_UTIL",
    )
    p.add_argument("--out", required=True, type=Path, help="directory for the CSV files")


def run(args: argparse.Namespace) -> int:
    started = time.monotonic()
    try:
        since, step = _window(args.since, args.step)
        credentials = _credentials(args)
        _check_writable(args.out)
        view = _cluster(args, time.time())
        read = asyncio.run(_read(args, credentials, since, step))
        export = build_export(read, view, step)
        paths = _write(export, args.out)
    except Refused as err:
        print(f"{PROG}: {err}", file=sys.stderr)
        return err.code
    summary = {
        "source": args.metrics_source,
        "recorded_rules": read.recorded,
        "since_seconds": since,
        "step_seconds": step,
        "pods": len(export.pods),
        "nodes": len(export.nodes),
        "utilization_samples": len(export.utilization),
        "memory_samples": None if export.memory is None else len(export.memory),
        "nodes_with_device_memory": int(export.nodes["gpu_memory_mib"].notna().sum()),
        "timesliced_nodes": export.timesliced,
        "queue_from": export.queue_sources,
        "kube_state_metrics": read.arrivals.found,
        "arrivals_from_kube_pod_created": export.arrivals_from_created,
        "never_ran_pods": export.never_ran,
        "prometheus_requests": read.requests,
        "seconds": round(time.monotonic() - started, 2),
        "files": {k: str(v) for k, v in paths.items()},
        "problems": [*view.problems, *read.problems, *export.problems],
    }
    print(json.dumps(summary, indent=2))
    return 0


def _window(since_text: str, step_text: str) -> tuple[float, float]:
    try:
        since, step = parse_duration(since_text), parse_duration(step_text)
    except ValueError as err:
        raise Refused(f"--since/--step: {err}", 2) from err
    if step <= 0 or since < step:
        raise Refused(
            f"--step must be > 0 and --since >= --step (got {since_text}, {step_text})", 2
        )
    return since, step


def _credentials(args: argparse.Namespace) -> Credentials:
    try:
        return prometheus_credentials(args)
    except CredentialError as err:
        raise Refused(str(err), 2) from err


def _check_writable(out: Path) -> None:
    """Fail before a long read, not after it: create `out` and write a file there."""
    try:
        out.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryFile(dir=out):
            pass
    except OSError as err:
        raise Refused(f"--out {out} is not a writable directory: {err.strerror or err}", 2) from err


def _write(export: Export, out: Path) -> dict[str, Path]:
    try:
        return write_export(export, out)
    except OSError as err:
        raise Refused(f"cannot write to --out {out}: {err}", 1) from err


def _cluster(args: argparse.Namespace, now: float) -> ClusterView:
    if args.cluster_file:
        try:
            return load_cluster_file(args.cluster_file, now)
        except ClusterFileError as err:
            raise Refused(f"--cluster-file: {err}", 2) from err
    try:
        api = build_api(args.kubeconfig)
    except KubeConfigError as err:
        raise Refused(str(err), 2) from err
    try:
        return read_cluster_sync(api, now)
    except ClusterReadError as err:
        raise Refused(f"cannot read the cluster: {err}", 1) from err
    finally:
        api.close()


async def _read(
    args: argparse.Namespace, credentials: Credentials, since: float, step: float
) -> WindowRead:
    bar = ProgressBar(sys.stderr, "export-history") if sys.stderr.isatty() else None
    end = time.time()
    try:
        async with PromClient(args.prometheus_url, RETRY, credentials=credentials) as prom:
            read = await read_window(
                prom,
                end - since,
                end,
                MetricsSource(args.metrics_source),
                step=step,
                on_chunk=(lambda done, total: bar(done / total)) if bar else None,
            )
    except WindowUnavailable as err:
        raise Refused(f"cannot read history from Prometheus: {err}", 1) from err
    finally:
        if bar is not None:
            bar.close()
    if read.pods.empty:
        raise Refused(_no_series(args.metrics_source, since), 1)
    return read


def _no_series(source: str, since: float) -> str:
    wanted = (
        "DCGM_FI_DEV_GPU_UTIL with a pod label"
        if source == "dcgm"
        else ("gpu_pod_utilization_ratio / gpu_pod_allocated")
    )
    other = "gpu-reclaim" if source == "dcgm" else "dcgm"
    return (
        f"Prometheus holds no per-pod GPU series ({wanted}) in the last {since:g} s: is the "
        f"exporter scraped, and is this the right --metrics-source (try {other})?"
    )
