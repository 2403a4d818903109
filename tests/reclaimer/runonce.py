"""`gpu-reclaimer run --once --json` in-process against a Prometheus and a kubeconfig."""

from __future__ import annotations

import io
import json
from contextlib import redirect_stdout
from pathlib import Path
from typing import Any

from promserver import PromServer

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
