"""Processes and files for scripts/demo.py: child processes, ports, backfill, Prometheus config.

Every child runs in its own session (so Ctrl-C reaches only the demo, which then stops them in
reverse start order: SIGTERM, then SIGKILL after a grace period) with its output in a log file
of the work directory; a child that dies early is reported with the tail of its log.
Standard library only, plus PyYAML (a declared dependency) to join the example manifests.
"""

from __future__ import annotations

import json
import signal
import socket
import subprocess
import sys
import time
import urllib.parse
import urllib.request
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import yaml

import gpu_contract as gc

REPO = Path(__file__).resolve().parent.parent
EXAMPLES = REPO / "deploy" / "examples"
SIM = EXAMPLES / "sim"
RULES = REPO / "rules" / "gpu-reclaim.rules.yml"
POLICY = EXAMPLES / "gpu-sharing-config" / "policy.yaml"
PROMETHEUS = "/usr/bin/prometheus"
PROMTOOL = "/usr/bin/promtool"


class DemoError(RuntimeError):
    """A step failed; the message says which and why."""


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def tail(path: Path, lines: int = 15) -> str:
    try:
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])
    except OSError:
        return "(no log)"


class Children:
    """Started processes, stopped in reverse order by `stop_all()`."""

    def __init__(self, workdir: Path) -> None:
        self.workdir = workdir
        self.procs: list[tuple[str, subprocess.Popen[bytes], Path]] = []

    def start(self, name: str, args: Sequence[str]) -> subprocess.Popen[bytes]:
        log = self.workdir / f"{name}.log"
        with log.open("ab") as out:
            proc = subprocess.Popen(
                list(args), stdout=out, stderr=subprocess.STDOUT, cwd=REPO, start_new_session=True
            )
        self.procs.append((name, proc, log))
        return proc

    def check(self) -> None:
        for name, proc, log in self.procs:
            if proc.poll() is not None:
                raise DemoError(f"{name} exited with {proc.returncode}:\n{tail(log)}")

    def stop(self, proc: subprocess.Popen[bytes], grace: float = 10.0) -> None:
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(timeout=grace)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        self.procs = [p for p in self.procs if p[1] is not proc]

    def stop_all(self) -> None:
        for _, proc, _ in reversed(list(self.procs)):
            self.stop(proc)


def run(args: Sequence[str], what: str, timeout: float = 120.0) -> str:
    result = subprocess.run(
        list(args), cwd=REPO, capture_output=True, text=True, timeout=timeout, check=False
    )
    if result.returncode != 0:
        raise DemoError(f"{what} failed ({result.returncode}):\n{result.stderr[-2000:]}")
    return result.stdout


def wait_for(what: str, check: Callable[[], bool], children: Children, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        children.check()
        try:
            if check():
                return
        except OSError:
            pass  # not listening yet
        time.sleep(0.25)
    raise DemoError(f"{what}: not ready after {timeout:.0f}s")


# Loopback only: never route the demo's requests through an HTTP proxy from the environment.
_OPENER = urllib.request.build_opener(urllib.request.ProxyHandler({}))


def http_get(url: str, timeout: float = 5.0) -> bytes:
    with _OPENER.open(url, timeout=timeout) as r:
        body: bytes = r.read()
        return body


def prom_query(url: str, expr: str) -> list[dict[str, Any]]:
    body = json.loads(http_get(f"{url}/api/v1/query?" + urllib.parse.urlencode({"query": expr})))
    if body.get("status") != "success":
        raise DemoError(f"query {expr!r}: {body}")
    result: list[dict[str, Any]] = body["data"]["result"]
    return result


def sim_nodes() -> dict[str, int]:
    """Node name -> physical GPUs, from sim/cluster-state.yaml (label nvidia.com/gpu.count)."""
    docs = yaml.safe_load_all((SIM / "cluster-state.yaml").read_text(encoding="utf-8"))
    return {
        d["metadata"]["name"]: int(d["metadata"]["labels"]["nvidia.com/gpu.count"])
        for d in docs
        if d and d["kind"] == "Node"
    }


def exporter_args(node: str, gpus: int, port: int) -> list[str]:
    return [
        sys.executable, "-m", "exporter", "--backend=sim",
        f"--web.listen-address=127.0.0.1:{port}", f"--node-name={node}",
        f"--sim.gpus={gpus}", f"--sim.workloads={SIM / f'{node}.workloads.yaml'}",
        "--collect-interval=1",
    ]  # fmt: skip


def backfill_args(node: str, gpus: int, days: float, end: float, out: Path) -> list[str]:
    return [
        sys.executable, "-m", "exporter.sim.backfill", f"--sim.gpus={gpus}",
        f"--sim.workloads={SIM / f'{node}.workloads.yaml'}", f"--node-name={node}",
        f"--days={days}", "--step=60", f"--end={end:.0f}", f"--out={out}",
    ]  # fmt: skip


def add_target_labels(src: Path, dst: Path, labels: dict[str, str]) -> None:
    """Give backfilled samples the job/instance labels the live scrape adds: one series each."""
    extra = ",".join(f'{k}="{v}"' for k, v in labels.items())
    with src.open(encoding="utf-8") as fin, dst.open("w", encoding="utf-8") as fout:
        for line in fin:
            sample = not line.startswith("#") and "{" in line
            fout.write(line.replace("{", "{" + extra + ",", 1) if sample else line)


def demo_rules(workdir: Path) -> Path:
    """rules/ with group intervals dropped, so the demo's global interval applies to every group."""
    doc = yaml.safe_load(RULES.read_text(encoding="utf-8"))
    for group in doc["groups"]:
        group.pop("interval", None)
    out = workdir / "gpu-reclaim.rules.yml"
    out.write_text(yaml.safe_dump(doc, sort_keys=False), encoding="utf-8")
    return out


def reclaimer_rules(workdir: Path) -> Path:
    """Only the recording rules the reclaimer reads, for `promtool tsdb create-blocks-from rules`.

    The reclaimer prefers these series when Prometheus has them, so their history must reach as
    far back as the raw one; the other rules are left to live evaluation (backfilling each one
    costs seconds, and rules built on other recorded series cannot be backfilled at all).
    """
    wanted = {gc.RECORDED_POD_UTILIZATION_5M, gc.RECORDED_POD_ALLOCATED}
    doc = yaml.safe_load(RULES.read_text(encoding="utf-8"))
    rules = [r for g in doc["groups"] for r in g["rules"] if r.get("record") in wanted]
    out = workdir / "reclaimer.rules.yml"
    out.write_text(yaml.safe_dump({"groups": [{"name": "reclaimer", "rules": rules}]}), "utf-8")
    return out


def prometheus_config(workdir: Path, exporters: Sequence[str], reclaimer: str, rules: Path) -> Path:
    config = {
        "global": {"scrape_interval": "2s", "evaluation_interval": "5s"},
        "rule_files": [str(rules)],
        "scrape_configs": [
            {"job_name": "gpu-exporter", "static_configs": [{"targets": list(exporters)}]},
            {"job_name": "gpu-reclaimer", "static_configs": [{"targets": [reclaimer]}]},
        ],
    }
    path = workdir / "prometheus.yml"
    path.write_text(yaml.safe_dump(config), encoding="utf-8")
    return path


def prometheus_args(config: Path, data: Path, port: int) -> list[str]:
    return [
        PROMETHEUS, f"--config.file={config}", f"--storage.tsdb.path={data}",
        f"--web.listen-address=127.0.0.1:{port}", "--storage.tsdb.retention.time=15d",
        "--log.level=warn",
    ]  # fmt: skip


def cluster_file(workdir: Path) -> Path:
    """deploy/examples (as kustomization.yaml lists them) joined with sim/cluster-state.yaml.

    Runtime objects (scheduled pods, PodGroups, nodes) replace same-named example objects.
    """
    kust = yaml.safe_load((EXAMPLES / "kustomization.yaml").read_text(encoding="utf-8"))
    examples = [
        d
        for f in kust["resources"]
        for d in yaml.safe_load_all((EXAMPLES / f).read_text(encoding="utf-8"))
        if d
    ]
    state = [d for d in yaml.safe_load_all((SIM / "cluster-state.yaml").read_text("utf-8")) if d]

    def key(d: dict[str, Any]) -> tuple[str, str, str]:
        return d["kind"], d["metadata"].get("namespace", ""), d["metadata"]["name"]

    replaced = {key(d) for d in state}
    docs = [d for d in examples if key(d) not in replaced] + state
    out = workdir / "cluster.yaml"
    out.write_text(yaml.safe_dump_all(docs, sort_keys=False), encoding="utf-8")
    return out
