"""`gpu-reclaimer run --once --json --apply` in a process of its own whose clock stands still at
a time the test chooses: the injected clock of tests about countdowns.

Each call is a fresh process, as a restarted controller or a new leader is, so nothing carries
over between cycles but what the cluster holds. Its `time.time` answers `at` throughout (the
controller reads the wall clock only through it: `reclaimer.commands.run`), so a test can run a
cycle one second before a stop is due and one at its second, whatever the machine's speed.
Durations the process measures itself (timeouts) use the monotonic clock and still run.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

from repo_paths import REPO

GIVE_UP_S = 300.0  # only a hung process takes this long, even on a busy machine

_FROZEN = """\
import sys, time
at = float(sys.argv[1])
time.time = lambda: at
from reclaimer.cli import main
sys.exit(main(sys.argv[2:]))
"""


def applied_at(at: float, prom_url: str, kubeconfig: Path, *extra: str) -> dict[str, Any]:
    """One `run --once --json --apply` cycle at `at` (Unix seconds) that must succeed."""
    argv = [sys.executable, "-c", _FROZEN, repr(at), "run", "--once", "--json", "--apply"]
    argv += ["--prometheus-url", prom_url, "--kubeconfig", str(kubeconfig), *extra]
    done = subprocess.run(
        argv, cwd=REPO, capture_output=True, text=True, timeout=GIVE_UP_S, check=False
    )
    assert done.returncode == 0, done.stderr[-3000:]
    report: dict[str, Any] = json.loads(done.stdout)
    assert report["plan"]["created_at"] == at, "the cycle did not run at the injected time"
    return report
