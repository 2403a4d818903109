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
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import traceback
import urllib.error
import urllib.request
from contextlib import ExitStack
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from exporter.cli import attribution_sources, build_parser  # noqa: E402
from exporter.collector import Collector  # noqa: E402
from exporter.config import ExporterConfig, load_config  # noqa: E402
from exporter.model import DeviceReading, NodeSnapshot  # noqa: E402
from exporter.nvml import NvmlSource, build_nvml_backend  # noqa: E402
from exporter.nvml_calls import DeviceCalls  # noqa: E402
from exporter.nvml_readings import FB_FREE, FB_RESERVED, FB_USED, GPU_UTIL  # noqa: E402
from exporter.nvml_readings import Collector as NvmlCollector  # noqa: E402
from exporter.sources import BackendParts  # noqa: E402
from gpu_contract import BY_NAME  # noqa: E402

NODE = "gpu-check"
SMI_QUERY = "index,uuid,utilization.gpu,memory.used,memory.total"
# promtool complaints dcgm-exporter compatibility forces on DCGM's own families (as in the tests)
DCGM_ONLY = re.compile(
    r'^DCGM_FI_\w+ (counter metrics should have "_total" suffix|label names should be written '
    r"in 'snake_case' not 'camelCase'|metric name should not include type 'counter')$"
)
_SAMPLE = re.compile(r"^([A-Za-z_:][\w:]*)(?:\{(.*)\})? \S+$")
_LABEL = re.compile(r'(\w+)="((?:[^"\\]|\\.)*)"')


@dataclass(frozen=True)
class Check:
    name: str
    ok: bool | None  # None: skipped (nothing to check against here)
    detail: str


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--lib", choices=("pynvml", "sim"), default="pynvml")
    p.add_argument("--seconds", type=float, default=20.0, help="collection phase length")
    p.add_argument("--cycles", type=int, default=5, help="collect cycles in that time")
    p.add_argument("--out", type=Path, default=Path(os.environ.get("OUT") or "gpu-check-out"))
    p.add_argument("--nvidia-smi", default=shutil.which("nvidia-smi"), help="path; default PATH")
    p.add_argument("--sim.inject", dest="inject", action="append", default=[], metavar="CALL=CODE")
    return p.parse_args(argv)


def exporter_flags(lib: str, port: int) -> list[str]:
    """The CLI flags both the in-process collector and the served exporter are built from."""
    backend = ["--backend", "sim"] if lib == "sim" else ["--backend", "nvml"]
    no_api = [] if lib == "sim" else ["--no-collector.kubernetes"]  # no API server on a bare box
    addr = f"127.0.0.1:{port}"
    return [*backend, "--node-name", NODE, "--web.listen-address", addr, *no_api]


def build_parts(config: ExporterConfig, args: argparse.Namespace, tmp: Path) -> BackendParts:
    """The parts `exporter.cli` builds for this config; `--sim.inject` faults go in the emulator."""
    if args.lib == "pynvml":
        return build_nvml_backend(proc_root=config.procfs)
    from exporter.sim import build_sim_backend  # noqa: PLC0415 (a real node never loads it)

    parts, node = build_sim_backend(
        gpus=config.sim_gpus,
        mig=config.sim_mig,
        pods=config.sim_pods,
        seed=config.sim_seed,
        workloads_file=config.sim_workloads,
        fixture_dir=tmp,
        node_name=config.node_name,
    )
    for fault in args.inject:
        call, _, code = fault.partition("=")
        node.lib.inject(call, int(code))
    return parts


def _num(value: float | None) -> float | None:
    return None if value is None or math.isnan(value) else value


def _total_mib(d: DeviceReading) -> float | None:
    parts = [d.values.get(f) for f in (FB_FREE, FB_USED)]
    if None in parts:
        return None
    return sum(p for p in parts if p is not None) + d.values.get(FB_RESERVED, 0.0)


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
        row["memory_total_mib"] = _total_mib(d)
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
    found = Check("devices_found", bool(last), f"{ident['device_count']} device(s)")
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


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def get(url: str) -> str | None:
    try:
        with urllib.request.urlopen(url, timeout=5) as r:
            return str(r.read().decode())
    except (urllib.error.URLError, OSError):
        return None


def samples(text: str) -> list[tuple[str, dict[str, str]]]:
    out = []
    for line in text.splitlines():
        m = _SAMPLE.match(line)
        if m and not line.startswith("#"):
            out.append((m[1], dict(_LABEL.findall(m[2] or ""))))
    return out


def expected_series(devices: tuple[DeviceReading, ...]) -> list[tuple[str, DeviceReading]]:
    return [(f, d) for d in devices for f in sorted(d.values) if f in BY_NAME]


def label_problems(text: str, devices: tuple[DeviceReading, ...]) -> list[str]:
    """Each (family, device) the collector read must be served with the contract's labels."""
    served = samples(text)
    problems = []
    for fam, d in expected_series(devices):
        spec = BY_NAME[fam]
        names = set(spec.labels) | (set(spec.mig_labels) if d.mig else set())
        want = {
            "gpu": str(d.index),
            "UUID": d.uuid,
            "device": f"nvidia{d.minor}",
            "modelName": d.model_name,
            "Hostname": NODE,
        }
        if d.mig is not None:
            want["GPU_I_ID"] = str(d.mig.gpu_instance_id)
        hits = [lab for n, lab in served if n == fam and want.items() <= lab.items()]
        if len(hits) != 1 or set(hits[0]) != names:
            problems.append(f"{fam} {d.uuid} {d.mig_uuid or ''}: {len(hits)} series {hits[:1]}")
    return problems


def serve_and_scrape(flags: list[str], port: int, out: Path, stack: ExitStack) -> list[str]:
    cmd = [sys.executable, "-m", "exporter", *flags, "--collect-interval", "1"]
    log = stack.enter_context((out / "exporter.log").open("w"))
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    proc = subprocess.Popen(cmd, cwd=REPO, stdout=log, stderr=subprocess.STDOUT, env=env)
    stack.callback(_stop, proc)
    deadline = time.monotonic() + 30
    while get(f"http://127.0.0.1:{port}/readyz") is None and time.monotonic() < deadline:
        if proc.poll() is not None:
            return []
        time.sleep(0.3)
    time.sleep(2.5)  # a few cycles, so GPM and process samples have a previous sample
    scrapes = []
    for i in (1, 2):
        body = get(f"http://127.0.0.1:{port}/metrics")
        if body is not None:
            (out / f"scrape-{i}.prom").write_text(body)
            scrapes.append(body)
        time.sleep(1.2)
    return scrapes


def _stop(proc: subprocess.Popen[bytes]) -> None:
    proc.terminate()
    try:
        proc.wait(timeout=10)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


def check_scrapes(scrapes: list[str], devices: tuple[DeviceReading, ...]) -> list[Check]:
    served = Check("exporter_served", len(scrapes) == 2, f"{len(scrapes)}/2 scrapes")
    if not scrapes:
        return [served, Check("scrape_labels", False, "nothing scraped")]
    problems = label_problems(scrapes[-1], devices)
    n = len(expected_series(devices))
    labels = Check("scrape_labels", bool(n) and not problems, f"{n} series; problems: {problems}")
    if shutil.which("promtool") is None:
        return [served, labels, Check("promtool", None, "promtool not on PATH")]
    run = subprocess.run(
        ["promtool", "check", "metrics"],
        input=scrapes[-1],
        text=True,
        capture_output=True,
        timeout=60,
        check=False,
    )
    lines = [ln for ln in (run.stdout + run.stderr).splitlines() if not DCGM_ONLY.match(ln.strip())]
    return [served, labels, Check("promtool", not lines, "; ".join(lines) or "clean")]


def check_smi(smi: str | None, devices: tuple[DeviceReading, ...]) -> tuple[Check, list[str]]:
    if not smi:
        return Check("nvidia_smi", None, "nvidia-smi not found"), []
    run = subprocess.run(
        [smi, f"--query-gpu={SMI_QUERY}", "--format=csv,noheader,nounits"],
        text=True,
        capture_output=True,
        timeout=30,
        check=False,
    )
    rows = [ln for ln in run.stdout.splitlines() if ln.strip()]
    if run.returncode != 0:
        return Check("nvidia_smi", False, f"exit {run.returncode}: {run.stderr.strip()}"), rows
    ours = {d.uuid: d for d in devices if d.mig is None}
    theirs = {f[1]: f for f in (tuple(x.strip() for x in r.split(",")) for r in rows)}
    problems = [] if set(ours) == set(theirs) else [f"UUIDs {sorted(ours)} != {sorted(theirs)}"]
    for uuid in set(ours) & set(theirs):
        total, used = float(theirs[uuid][4]), float(theirs[uuid][3])
        mine = (_total_mib(ours[uuid]), ours[uuid].values.get(FB_USED))
        for what, a, b in (("total", mine[0], total), ("used", mine[1], used)):
            if a is None or abs(a - b) > 0.01 * total:
                problems.append(f"{uuid} memory {what}: exporter {a} MiB, nvidia-smi {b} MiB")
    return Check(
        "nvidia_smi", not problems, "; ".join(problems) or f"{len(rows)} GPU(s) match"
    ), rows


def run_check(args: argparse.Namespace, report: dict[str, Any]) -> list[Check]:
    port = free_port()
    flags = exporter_flags(args.lib, port)
    config = load_config(vars(build_parser().parse_args(flags)), os.environ, socket.gethostname())
    with ExitStack() as stack, tempfile.TemporaryDirectory(prefix="gpu-check-") as tmp:
        parts = build_parts(config, args, Path(tmp))
        stack.callback(parts.devices.close)
        collector = Collector(
            parts.devices, attribution_sources(config, parts, stack), hostname=NODE, interval=1.0
        )
        snaps = collect(collector, args.cycles, args.seconds)
        assert isinstance(parts.devices, NvmlSource)  # both backends read through NvmlSource
        report["identity"] = identity(parts.devices, snaps[-1].devices)
        report["cycles"] = [cycle_record(s) for s in snaps]
        checks = check_collection(snaps, report["identity"])
        with ExitStack() as served:  # the exporter subprocess is stopped before we go on
            scrapes = serve_and_scrape(flags, port, args.out, served)
        checks += check_scrapes(scrapes, snaps[-1].devices)
        smi, report["nvidia_smi_rows"] = check_smi(args.nvidia_smi, snaps[-1].devices)
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
    report["checks"] = [asdict(c) for c in checks]
    report["passed"] = all(c.ok is not False for c in checks)
    (args.out / "gpu_check.json").write_text(json.dumps(report, indent=1, default=str))
    for c in checks:
        status = {True: "PASS", False: "FAIL", None: "SKIP"}[c.ok]
        print(f"{status} {c.name}: {c.detail[:300]}")
    print(("PASS" if report["passed"] else "FAIL") + f" -> {args.out / 'gpu_check.json'}")
    return 0 if report["passed"] else 1


if __name__ == "__main__":
    sys.exit(main())
