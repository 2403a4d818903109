"""`gpu-reclaimer run --once --json` against a Prometheus and a kubeconfig: in this process
(`run_once`), or in a process of its own, as a cycle after a restart is (`once_in_process`,
`applied_once`)."""

from __future__ import annotations

import io
import json
import subprocess
import sys
from contextlib import redirect_stdout
from pathlib import Path
from typing import Any

from promserver import PromServer
from repo_paths import REPO

from reclaimer.cli import main


def run_once(prom: PromServer, kubeconfig: Path, *extra: str) -> tuple[int, dict[str, Any]]:
    """(exit code, the JSON report) of one cycle."""
    out = io.StringIO()
    with redirect_stdout(out):
        code = main(
            [
                "run",
                "--once",
                "--json",
                "--prometheus-url",
                prom.url,
                "--kubeconfig",
                str(kubeconfig),
                *extra,
            ]
        )
    return code, json.loads(out.getvalue())


GIVE_UP_S = 300.0  # only a hung process takes this long, even on a busy machine


def once_in_process(
    prom_url: str, kubeconfig: Path, *extra: str, timeout: float = GIVE_UP_S
) -> tuple[int, dict[str, Any], str]:
    """One `run --once --json` in a process of its own: (exit code, report or {}, stderr)."""
    argv = [sys.executable, "-m", "reclaimer", "run", "--once", "--json"]
    argv += ["--prometheus-url", prom_url, "--kubeconfig", str(kubeconfig), *extra]
    done = subprocess.run(
        argv, cwd=REPO, capture_output=True, text=True, timeout=timeout, check=False
    )
    report = json.loads(done.stdout) if done.stdout.strip() else {}
    return done.returncode, report, done.stderr


def applied_once(
    prom_url: str, kubeconfig: Path, *extra: str, timeout: float = GIVE_UP_S
) -> dict[str, Any]:
    """One `run --once --json --apply` process that must succeed: its report."""
    code, report, err = once_in_process(prom_url, kubeconfig, "--apply", *extra, timeout=timeout)
    assert code == 0, err
    return report
