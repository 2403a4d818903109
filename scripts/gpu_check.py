"""One-command check of the exporter's NVML path on a real GPU machine (or the emulator).

    .venv/bin/python scripts/gpu_check.py [--lib pynvml|sim] [--seconds 20] [--out DIR]

Phases, all through the exporter's own code (nothing here re-implements a reading):
1. identity: build the backend the CLI would build from the same flags (`build_nvml_backend`, or
   `build_sim_backend` for `--lib sim`), run the exporter's `Collector`, and report what its
   `NvmlSource` saw: driver/NVML versions, each device's name, UUID, MIG mode, memory total, and
   the calls it disabled because NVML answered NotSupported (GPM, process samples, events ...).
2. collection: `Collector.collect_once` for `--cycles` cycles over `--seconds`, recording each
   device's readings and processes, each pod's usage and the per-collector success and errors.
3. serving: `python -m exporter` with the same flags on a free 127.0.0.1 port, scraped twice;
   every device family the collector read must be served for that device with the contract's
   labels; `promtool check metrics` on the scrape when promtool is on PATH. Always stopped.
4. nvidia-smi (when found): UUIDs must match exactly, memory total and used within 1% of total.
Writes gpu_check.json and the scrapes to --out, prints PASS/FAIL per check, exits 0 only if no
check failed (a skipped check, e.g. no nvidia-smi, is not a failure).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import shutil
import socket
import sys
import tempfile
import time
import traceback
from contextlib import ExitStack
from dataclasses import asdict
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from gpu_check_load import check_load, start_load  # noqa: E402
from gpu_check_served import (  # noqa: E402
    NODE,
    Check,
    check_scrapes,
    check_smi,
    expected_series,
    free_port,
    memory_total_mib,
    serve_and_scrape,
)

from exporter.cli import attribution_sources, build_parser  # noqa: E402
from exporter.collector import Collector  # noqa: E402
from exporter.config import ExporterConfig, load_config  # noqa: E402
from exporter.model import DeviceReading, NodeSnapshot  # noqa: E402
from exporter.nvml import NvmlSource, build_nvml_backend  # noqa: E402
from exporter.nvml_calls import DeviceCalls  # noqa: E402
from exporter.nvml_readings import FB_USED, GPU_UTIL  # noqa: E402
from exporter.nvml_readings import Collector as NvmlCollector  # noqa: E402
from exporter.sources import BackendParts  # noqa: E402


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--lib", choices=("pynvml", "sim"), default="pynvml")
    p.add_argument("--seconds", type=float, default=20.0, help="collection phase length")
    p.add_argument("--cycles", type=int, default=5, help="collect cycles in that time")
    p.add_argument("--out", type=Path, default=Path(os.environ.get("OUT") or "gpu-check-out"))
    p.add_argument("--nvidia-smi", default=shutil.which("nvidia-smi"), help="path; default PATH")
    p.add_argument(
        "--load",
        choices=("auto", "torch", "none"),
        default="auto",
        help="keep the GPU busy with torch matmuls while checking (auto: pynvml and torch found)",
    )
    p.add_argument("--sim.mig", dest="sim_mig", type=int, default=0, help="MIG-enabled sim GPUs")
    p.add_argument("--sim.inject", dest="inject", action="append", default=[], metavar="CALL=CODE")
    return p.parse_args(argv)


def exporter_flags(lib: str, port: int, sim_mig: int = 0) -> list[str]:
    """The CLI flags both the in-process collector and the served exporter are built from."""
    backend = (
        ["--backend", "sim", "--sim.mig", str(sim_mig)] if lib == "sim" else ["--backend", "nvml"]
    )
    no_api = [] if lib == "sim" else ["--no-collector.kubernetes"]  # no API server on a bare box
    addr = f"127.0.0.1:{port}"
    return [*backend, "--node-name", NODE, "--web.listen-address", addr, *no_api]


def build_parts(config: ExporterConfig, args: argparse.Namespace, tmp: Path) -> BackendParts:
    """The parts `exporter.cli` builds for this config; `--sim.inject` faults go in the emulator."""
    if args.lib == "pynvml":
        return build_nvml_backend(proc_root=config.procfs)
    from exporter.sim import sim_backend_for  # noqa: PLC0415 (a real node never loads it)

    parts, node = sim_backend_for(config, tmp)
    for fault in args.inject:
        call, _, code = fault.partition("=")
        node.lib.inject(call, int(code))
    return parts


def _num(value: float | None) -> float | None:
    return None if value is None or math.isnan(value) else value


def identity(source: NvmlSource, devices: tuple[DeviceReading, ...]) -> dict[str, Any]:
    """What the source reported about the node, plus versions and MIG mode through its calls."""
    node = DeviceCalls(source.lib, None, set(), {})
    versions = {"driver": devices[0].driver_version if devices else ""}
    for key, call in (
        ("nvml", "nvmlSystemGetNVMLVersion"),
        ("cuda", "nvmlSystemGetCudaDriverVersion"),
    ):
        got = node.call("identity", call)
        versions[key] = str(got.value) if got.ok else "unavailable"
    rows = []
    for d in devices:
        row: dict[str, Any] = {"gpu": d.index, "uuid": d.uuid, "name": d.model_name}
        if d.mig is None:
            calls = DeviceCalls(source.lib, d.index, set(), {})
            handle = calls.call("mig", "nvmlDeviceGetHandleByIndex", d.index)
            mode = calls.call("mig", "nvmlDeviceGetMigMode", handle.value) if handle.ok else handle
            row["mig_mode"] = list(mode.value) if mode.ok else "not supported"
        else:
            row.update(mig_uuid=d.mig_uuid, profile=d.mig.profile, gpu_i_id=d.mig.gpu_instance_id)
        row["memory_total_mib"] = memory_total_mib(d)
        rows.append(row)
    unsupported = sorted(f"{key}: {call}" for key, call in source.unsupported)
    return {
        "versions": versions,
        "device_count": len(rows),
        "devices": rows,
        "not_supported": unsupported,
    }


def cycle_record(s: NodeSnapshot) -> dict[str, Any]:
    devices = [
        {
            "gpu": d.index,
            "uuid": d.uuid,
            "mig_uuid": d.mig_uuid,
            "failed": sorted(d.failed),
            "values": {k: _num(v) for k, v in sorted(d.values.items())},
            "processes": [
                {
                    "pid": p.pid,
                    "sm": _num(p.sm_util),
                    "mem": _num(p.mem_util),
                    "memory_bytes": p.memory_bytes,
                }
                for p in d.processes
            ],
        }
        for d in s.devices
    ]
    pods = [
        {
            "pod": f"{p.ref.namespace}/{p.ref.pod}/{p.ref.container}",
            "uuid": p.device.uuid,
            "mig_uuid": p.device.mig_uuid,
            "utilization": _num(p.utilization),
            "memory_bytes": p.memory_bytes,
            "processes": p.processes,
            "allocated": p.allocated,
        }
        for p in s.pods
    ]
    return {
        "taken_at": s.taken_at,
        "duration_s": s.duration_seconds,
        "devices": devices,
        "pods": pods,
        "collector_success": dict(s.collector_success),
        "errors_total": dict(s.errors_total),
    }


def collect(collector: Collector, cycles: int, seconds: float) -> list[NodeSnapshot]:
    out = []
    for i in range(max(cycles, 2)):  # two at least: process samples and GPM need a previous one
        if i:
            time.sleep(seconds / max(cycles - 1, 1))
        out.append(collector.collect_once().snapshot)
    return out


def check_collection(snaps: list[NodeSnapshot], ident: dict[str, Any]) -> list[Check]:
    last = snaps[-1].devices
    migs = sum(d.mig is not None for d in last)
    found = Check("devices_found", bool(last), f"{len(last) - migs} GPU(s), {migs} MIG instance(s)")
    bad_id = [r["gpu"] for r in ident["devices"] if not (r["uuid"] and r["name"])]
    driver = ident["versions"]["driver"]
    ids = Check("identity", bool(last and driver) and not bad_id, f"driver {driver!r}; {bad_id=}")
    nvml = {c.value for c in NvmlCollector}
    failed = sorted(
        {
            f"cycle {i}: {c}"
            for i, s in enumerate(snaps)
            for c, ok in s.collector_success.items()
            if c in nvml and not ok
        }
    )
    errors = {c: n for c, n in snaps[-1].errors_total.items() if c.startswith("nvml")}
    errs = Check("nvml_collectors", not failed and not errors, f"failed={failed} errors={errors}")
    missing = missing_readings(last)
    return [found, ids, errs, Check("device_readings", bool(last) and not missing, f"{missing}")]


def missing_readings(devices: tuple[DeviceReading, ...]) -> list[str]:
    """Memory on every device; utilization on every GPU whose MIG mode is off."""
    mig_parents = {d.mig.parent_index for d in devices if d.mig is not None}
    out = []
    for d in devices:
        whole = d.mig is None and d.index not in mig_parents
        for fam in (FB_USED, GPU_UTIL) if whole else (FB_USED,):
            if fam not in d.values:
                out.append(f"{d.mig_uuid or d.uuid}: {fam}")
    return out


def run_check(args: argparse.Namespace, report: dict[str, Any]) -> list[Check]:
    port = free_port()
    flags = exporter_flags(args.lib, port, args.sim_mig)
    config = load_config(vars(build_parser().parse_args(flags)), os.environ, socket.gethostname())
    with ExitStack() as stack, tempfile.TemporaryDirectory(prefix="gpu-check-") as tmp:
        parts = build_parts(config, args, Path(tmp))
        stack.callback(parts.devices.close)
        collector = Collector(
            parts.devices, attribution_sources(config, parts, stack), hostname=NODE, interval=1.0
        )
        load_pid = report["load_pid"] = start_load(args.load, args.lib, args.seconds + 60, stack)
        snaps = collect(collector, args.cycles, args.seconds)
        assert isinstance(parts.devices, NvmlSource)  # both backends read through NvmlSource
        report["identity"] = identity(parts.devices, snaps[-1].devices)
        report["cycles"] = [cycle_record(s) for s in snaps]
        checks = check_collection(snaps, report["identity"])
        if args.load == "torch" or load_pid is not None:
            checks.append(check_load(load_pid, snaps))
        # right after the last cycle, so that both read the same moment
        smi, report["nvidia_smi_rows"] = check_smi(args.nvidia_smi, snaps[-1].devices)
        report["exporter_argv"] = flags
        with ExitStack() as served:  # the exporter subprocess is stopped before we go on
            families = {f for f, _ in expected_series(snaps[-1].devices)}
            scrapes = serve_and_scrape(flags, port, args.out, served, families)
        checks += check_scrapes(scrapes, snaps[-1].devices)
    return [*checks, smi]


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    report: dict[str, Any] = {"lib": args.lib, "started_at": time.time()}
    try:
        checks = run_check(args, report)
    except Exception as exc:  # report what broke instead of a bare traceback on the device
        checks = [Check("run", False, f"{type(exc).__name__}: {exc}")]
        report["traceback"] = traceback.format_exc()
    report["elapsed_s"] = round(time.time() - report["started_at"], 1)
    report["checks"] = [asdict(c) for c in checks]
    report["passed"] = all(c.ok is not False for c in checks)
    (args.out / "gpu_check.json").write_text(json.dumps(report, indent=1, default=str))
    for c in checks:
        status = {True: "PASS", False: "FAIL", None: "SKIP"}[c.ok]
        print(f"{status} {c.name}: {c.detail[:300]}")
    verdict = "PASS" if report["passed"] else "FAIL"
    print(f"{verdict} in {report['elapsed_s']} s -> {args.out / 'gpu_check.json'}")
    return 0 if report["passed"] else 1


if __name__ == "__main__":
    sys.exit(main())
