"""scripts/demo.py end to end: real exporters, Prometheus, promtool backfills and the reclaimer.

`--once --json`: the dry-run plan preempts the idle job of the reclaimable queue
(research/bert-finetune) for the starved production job and leaves the busy one alone.
Without `--once`: the demo serves until SIGINT (Ctrl-C), the printed URLs answer, and every
child process is gone afterwards. Both leave no work directory behind.
"""

from __future__ import annotations

import json
import os
import queue
import re
import signal
import subprocess
import sys
import threading
import time
import urllib.request
from pathlib import Path
from typing import Any

import pytest
from promserver import require_prometheus
from repo_paths import REPO

DEMO = [sys.executable, str(REPO / "scripts" / "demo.py"), "--days", "1"]

pytestmark = [pytest.mark.prometheus, pytest.mark.slow]


def _workdir(stderr: str) -> Path:
    m = re.search(r"work directory (\S+)", stderr)
    assert m, stderr
    return Path(m[1])


def _processes_using(path: Path) -> list[str]:
    found = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()
        except OSError:
            continue
        if str(path) in cmdline:
            found.append(f"{pid}: {cmdline}")
    return found


def _actions(plan: dict[str, Any]) -> list[dict[str, Any]]:
    actions: list[dict[str, Any]] = plan["actions"]
    return actions


def test_once_plans_to_preempt_the_idle_reclaimable_job() -> None:
    require_prometheus()
    result = subprocess.run(
        [*DEMO, "--once", "--json"], capture_output=True, text=True, timeout=300, check=False
    )
    assert result.returncode == 0, result.stderr[-3000:]
    report = json.loads(result.stdout)
    plan = report["plan"]
    preempts = [a for a in _actions(plan) if a["kind"] == "preempt"]
    assert [a["target"] for a in preempts] == ["research/bert-finetune"], plan
    assert preempts[0]["reason"] == "IdleJobForStarvedQueue"
    assert preempts[0]["evidence"]["for_pending"] == "production/llm-pretrain"
    skipped = {s["target"]: s["reason"] for s in plan["skipped"]}
    assert skipped.get("research/resnet-train") == "NotForecastIdle"
    workdir = _workdir(result.stderr)
    assert not workdir.exists()
    assert not _processes_using(workdir)


def _reader(proc: subprocess.Popen[str]) -> queue.Queue[str]:
    """The child's stdout lines, read by a thread so waiting for one can time out."""
    lines: queue.Queue[str] = queue.Queue()

    def pump() -> None:
        assert proc.stdout is not None
        for line in proc.stdout:
            lines.put(line)

    threading.Thread(target=pump, daemon=True).start()
    return lines


def _read_until(lines: queue.Queue[str], marker: str, timeout: float) -> str:
    seen: list[str] = []
    deadline = time.monotonic() + timeout
    while (left := deadline - time.monotonic()) > 0:
        try:
            line = lines.get(timeout=left)
        except queue.Empty:
            break
        seen.append(line)
        if marker in line:
            return "".join(seen)
    raise AssertionError(f"{marker!r} not printed:\n{''.join(seen)}")


GIVE_UP_S = 300.0  # only a hung demo takes this long, even on a busy machine

# Loopback only, whatever proxy the environment names.
_OPENER = urllib.request.build_opener(urllib.request.ProxyHandler({}))


@pytest.mark.parametrize(
    ("signals", "code"),
    [((signal.SIGINT,), 0), ((signal.SIGTERM, signal.SIGTERM), 128 + signal.SIGTERM)],
    ids=["ctrl-c", "sigterm-twice"],
)
def test_serves_until_stopped_then_stops_every_child(
    tmp_path: Path, signals: tuple[signal.Signals, ...], code: int
) -> None:
    require_prometheus()
    err = (tmp_path / "stderr.txt").open("w+")
    proc = subprocess.Popen(
        DEMO, stdout=subprocess.PIPE, stderr=err, text=True, start_new_session=True
    )
    lines = _reader(proc)
    try:
        _read_until(lines, "What the reclaimer would do", 240)
        out = _read_until(lines, "status page:", 120)
        assert "research/bert-finetune" in out
        urls = dict(re.findall(r"^\s+(.+?):\s+(http://\S+)$", out, re.M))
        with _OPENER.open(urls["reclaimer /metrics"], timeout=GIVE_UP_S) as r:
            assert b"gpu_reclaimer_dry_run" in r.read()
        with _OPENER.open(urls["Prometheus"] + "/-/ready", timeout=GIVE_UP_S) as r:
            assert r.status == 200
        with _OPENER.open(urls["status page"], timeout=GIVE_UP_S) as r:
            assert b"gpu-reclaimer status" in r.read()
        for sig in signals:
            proc.send_signal(sig)
            time.sleep(0.2)
        assert proc.wait(timeout=GIVE_UP_S) == code
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    err.seek(0)
    workdir = _workdir(err.read())
    assert not workdir.exists()
    assert not _processes_using(workdir)
