"""gpu_check's serving half: the exporter CLI scraped against the contract, and nvidia-smi.

`serve_and_scrape` starts `python -m exporter` with the flags the in-process collector was built
from, waits until it serves every family that collector read, and scrapes it twice.
`label_problems` then requires, for every (family, device) the collect loop read, exactly one served
series with the device's identity labels and exactly the label names `gpu_contract` gives the
family. `check_smi` runs `nvidia-smi --query-gpu` between two readings of the collect loop and
compares what it read with them: it read a moment between the two, so each value must lie
between theirs, give or take its tolerance, however long nvidia-smi took to start (the GPU
warms up, its power moves): UUIDs exactly, memory total and used within 1% of the total, power
within 10% (15 W at least), temperature within 3 C, SM and memory clocks within 10%; a field
nvidia-smi gives as [N/A] is not compared.
"""

from __future__ import annotations

import os
import re
import shutil
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Sequence
from contextlib import ExitStack
from dataclasses import replace
from pathlib import Path
from typing import Any

from gpu_check_env import Check

from exporter.model import DeviceReading
from exporter.nvml.readings import FB_FREE, FB_RESERVED, FB_USED, family
from gpu_contract import BY_NAME, promtool_problems

REPO = Path(__file__).resolve().parent.parent
NODE = "gpu-check"  # the Hostname label both exporters are given
SMI_QUERY = (
    "index,uuid,utilization.gpu,memory.used,memory.total,"
    "power.draw,temperature.gpu,clocks.sm,clocks.mem"
)
SMI_FIELDS = len(SMI_QUERY.split(","))
SMI_GIVE_UP_S = 120.0  # only a hung nvidia-smi takes this long, even on a busy machine
SERVE_GIVE_UP_S = 120.0  # only an exporter that never serves every family takes this long
# nvidia-smi column -> (exporter family, absolute tolerance, relative tolerance)
SENSORS = {
    5: (family("DCGM_FI_DEV_POWER_USAGE"), 15.0, 0.10),
    6: (family("DCGM_FI_DEV_GPU_TEMP"), 3.0, 0.0),
    7: (family("DCGM_FI_DEV_SM_CLOCK"), 0.0, 0.10),
    8: (family("DCGM_FI_DEV_MEM_CLOCK"), 0.0, 0.10),
}
_SAMPLE = re.compile(r"^([A-Za-z_:][\w:]*)(?:\{(.*)\})? \S+$")
_LABEL = re.compile(r'(\w+)="((?:[^"\\]|\\.)*)"')


def memory_total_mib(d: DeviceReading) -> float | None:
    parts = [d.values.get(f) for f in (FB_FREE, FB_USED)]
    if None in parts:
        return None
    return sum(p for p in parts if p is not None) + d.values.get(FB_RESERVED, 0.0)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def get(url: str) -> str | None:
    try:
        with urllib.request.urlopen(url, timeout=30) as r:
            return str(r.read().decode())
    except (urllib.error.URLError, OSError):
        return None


def samples(text: str) -> list[tuple[str, dict[str, str]]]:
    """(name, labels) of every sample, names verbatim.

    Not `prometheus_client.parser`: it renames the DCGM counters (no `_total`) it reads, which
    would hide the very names this check compares with the contract.
    """
    out = []
    for line in text.splitlines():
        m = _SAMPLE.match(line)
        if m and not line.startswith("#"):
            out.append((m[1], dict(_LABEL.findall(m[2] or ""))))
    return out


def expected_series(devices: tuple[DeviceReading, ...]) -> list[tuple[str, DeviceReading]]:
    return [(f, d) for d in devices for f in sorted(d.values) if f in BY_NAME]


def label_problems(text: str, devices: tuple[DeviceReading, ...]) -> list[str]:
    """Each (family, device) the collect loop read must be served with the contract's labels."""
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
        instance = None if d.mig is None else str(d.mig.gpu_instance_id)
        hits = [
            lab
            for n, lab in served
            if n == fam and want.items() <= lab.items() and lab.get("GPU_I_ID") == instance
        ]
        if len(hits) != 1 or set(hits[0]) != names:
            problems.append(f"{fam} {d.uuid} {d.mig_uuid or ''}: {len(hits)} series {hits[:1]}")
    return problems


def serve_and_scrape(
    flags: list[str], port: int, out: Path, stack: ExitStack, families: set[str]
) -> list[str]:
    """Run the exporter CLI (stopped by `stack`); once it serves every one of `families` (GPM
    and process samples need a previous cycle), or after `SERVE_GIVE_UP_S`, scrape it twice a
    cycle apart."""
    cmd = [sys.executable, "-m", "exporter", *flags, "--collect-interval", "1"]
    log = stack.enter_context((out / "exporter.log").open("w"))
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    proc = subprocess.Popen(cmd, cwd=REPO, stdout=log, stderr=subprocess.STDOUT, env=env)
    stack.callback(stop_process, proc)
    url = f"http://127.0.0.1:{port}/metrics"
    deadline = time.monotonic() + SERVE_GIVE_UP_S
    body = None
    while proc.poll() is None and time.monotonic() < deadline:
        body = get(url)
        if body is not None and families <= {name for name, _ in samples(body)}:
            break
        time.sleep(0.3)
    scrapes = [] if body is None else [body]
    time.sleep(1.1)
    second = get(url)
    scrapes += [] if second is None else [second]
    for i, text in enumerate(scrapes, 1):
        (out / f"scrape-{i}.prom").write_text(text)
    return scrapes


def stop_process(proc: subprocess.Popen[Any]) -> None:
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
    lines = promtool_problems((run.stdout + run.stderr).splitlines(), scrapes[-1])
    return [served, labels, Check("promtool", not lines, "; ".join(lines) or "clean")]


def check_smi(
    smi: str | None,
    before: tuple[DeviceReading, ...],
    read_after: Callable[[], tuple[DeviceReading, ...]],
) -> tuple[Check, list[str]]:
    """nvidia-smi, run after the readings `before` and followed by `read_after()`."""
    if not smi:
        return Check("nvidia_smi", None, "nvidia-smi not found"), []
    run = subprocess.run(
        [smi, f"--query-gpu={SMI_QUERY}", "--format=csv,noheader,nounits"],
        text=True,
        capture_output=True,
        timeout=SMI_GIVE_UP_S,
        check=False,
    )
    after = read_after()
    rows = [ln for ln in run.stdout.splitlines() if ln.strip()]
    if run.returncode != 0:
        return Check("nvidia_smi", False, f"exit {run.returncode}: {run.stderr.strip()}"), rows
    problems = smi_problems(rows, whole_gpus(before), whole_gpus(after))
    return Check(
        "nvidia_smi", not problems, "; ".join(problems) or f"{len(rows)} GPU(s) match"
    ), rows


def whole_gpus(devices: Sequence[DeviceReading]) -> dict[str, DeviceReading]:
    """Each GPU by UUID; a MIG-enabled GPU, whose memory its instances carry, with their used
    memory summed (nvidia-smi's total counts memory outside any instance: not compared)."""
    out = {d.uuid: d for d in devices if d.mig is None}
    for uuid, gpu in out.items():
        parts = [d.values.get(FB_USED) for d in devices if d.mig is not None and d.uuid == uuid]
        if parts and None not in parts:
            used = sum(p for p in parts if p is not None)
            out[uuid] = replace(gpu, values={**gpu.values, FB_USED: used})
    return out


def smi_problems(
    rows: list[str], ours: dict[str, DeviceReading], after: dict[str, DeviceReading] | None = None
) -> list[str]:
    """UUIDs must match `ours` exactly; memory total and used within 1% of nvidia-smi's total;
    power, temperature and clocks within their tolerances (`SENSORS`), of the reading in `ours`
    or of any value between it and the one in `after` (read after nvidia-smi)."""
    fields = [[x.strip() for x in r.split(",")] for r in rows]
    theirs = {f[1]: f for f in fields if len(f) == SMI_FIELDS}
    problems = [
        f"unreadable row {r!r}" for r, f in zip(rows, fields, strict=True) if len(f) != SMI_FIELDS
    ]
    if set(ours) != set(theirs):
        problems.append(f"UUIDs {sorted(ours)} != {sorted(theirs)}")
    for uuid in sorted(set(ours) & set(theirs)):
        mine = [ours[uuid], *([after[uuid]] if after and uuid in after else [])]
        problems += _memory_problems(uuid, theirs[uuid], mine)
        problems += _sensor_problems(uuid, theirs[uuid], mine)
    return problems


def _outside(values: Sequence[float | None], theirs: float, tolerance: float) -> bool:
    """True when `theirs` is farther than `tolerance` from every value between ours."""
    if not values or None in values:
        return True
    known = [v for v in values if v is not None]
    return not min(known) - tolerance <= theirs <= max(known) + tolerance


def _shown(values: Sequence[float | None]) -> str:
    return " .. ".join(str(v) for v in values)


def _memory_problems(uuid: str, row: list[str], mine: Sequence[DeviceReading]) -> list[str]:
    try:
        total, used = float(row[4]), float(row[3])
    except ValueError:
        return [f"{uuid}: unreadable memory {row[3:5]}"]
    problems = []
    totals = [memory_total_mib(d) for d in mine]
    useds = [d.values.get(FB_USED) for d in mine]
    for what, ours, theirs in (("total", totals, total), ("used", useds, used)):
        if what == "total" and FB_FREE not in mine[0].values and FB_USED in mine[0].values:
            continue  # a MIG-enabled GPU: its instances' memory only
        if _outside(ours, theirs, 0.01 * total):
            problems.append(
                f"{uuid} memory {what}: exporter {_shown(ours)} MiB, nvidia-smi {theirs} MiB"
            )
    return problems


def _sensor_problems(uuid: str, row: list[str], mine: Sequence[DeviceReading]) -> list[str]:
    problems = []
    for column, (fam, absolute, relative) in SENSORS.items():
        try:
            theirs = float(row[column])
        except ValueError:  # [N/A], [Not Supported]: nothing to compare
            continue
        ours = [d.values.get(fam) for d in mine]
        if _outside(ours, theirs, max(absolute, relative * abs(theirs))):
            problems.append(f"{uuid} {fam}: exporter {_shown(ours)}, nvidia-smi {theirs}")
    return problems
