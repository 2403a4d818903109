"""A `gpu-reclaimer run` loop in a process of its own, for tests that watch it from outside.

`Controller` starts the real CLI (`python -m reclaimer run ...`) with its log in a file, and
offers what such a test needs: HTTP GETs on its port, its log, and `wait_for`, which polls a
condition until a deadline (never a fixed sleep) and fails early if the process died.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path

from promserver import free_port
from repo_paths import REPO

DEADLINE_S = 300.0  # generous: the shared 2-core machine runs other suites meanwhile


class Controller:
    def __init__(self, proc: subprocess.Popen[bytes], port: int, log: Path) -> None:
        self.proc, self.port, self.log_path = proc, port, log

    @property
    def base(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def get(self, path: str) -> tuple[int, str]:
        """(status, body) of a GET; (0, "") when nothing answers."""
        try:
            with urllib.request.urlopen(self.base + path, timeout=DEADLINE_S) as answer:
                return answer.status, answer.read().decode()
        except urllib.error.HTTPError as err:
            return err.code, err.read().decode(errors="replace")
        except OSError:
            return 0, ""

    def log(self) -> str:
        return self.log_path.read_text(errors="replace")

    def metric(self, sample: str) -> float | None:
        """The value of one exposition line's sample (`name{labels}`), None when absent."""
        _, body = self.get("/metrics")
        for line in body.splitlines():
            name, _, value = line.rpartition(" ")
            if name == sample:
                return float(value)
        return None

    def wait_for(self, condition: Callable[[], bool], what: str, alive: bool = True) -> None:
        deadline = time.monotonic() + DEADLINE_S
        while not condition():
            tail = self.log()[-3000:]
            if alive:
                assert self.proc.poll() is None, f"controller exited waiting for {what}:\n{tail}"
            assert time.monotonic() < deadline, f"gave up waiting for {what}:\n{tail}"
            time.sleep(0.2)


@contextmanager
def controller(
    args: Sequence[str], log: Path, env: Mapping[str, str] | None = None
) -> Iterator[Controller]:
    """Run `gpu-reclaimer run ARGS` on a free port for the block; SIGTERM (then kill) after."""
    port = free_port()
    argv = [sys.executable, "-m", "reclaimer", "run", *args]
    argv.append(f"--web.listen-address=127.0.0.1:{port}")
    with log.open("wb") as out:
        proc = subprocess.Popen(
            argv,
            stdout=out,
            stderr=subprocess.STDOUT,
            cwd=REPO,
            env={**os.environ, **(env or {})},
        )
        try:
            yield Controller(proc, port, log)
        finally:
            if proc.poll() is None:
                proc.send_signal(signal.SIGTERM)
                try:
                    proc.wait(timeout=30)
                except subprocess.TimeoutExpired:
                    proc.kill()
                    proc.wait()
