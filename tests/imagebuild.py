"""The image's Python environment, built as the Dockerfile builds it (see tests/ops/test_image.py).

`build_image(base)` lays out what the Dockerfile's build stage copies (`dockerbuild`), builds the
wheel from it, and installs it into a fresh virtual environment with only the runtime
dependencies, as the final stage does; it returns that environment's bin/ folder. `clean_env()`
is the environment to run its commands in, so nothing of the checkout's leaks in.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from dockerbuild import stage_tree
from repo_paths import REPO


def build_image(base: Path) -> Path:
    dockerfile, ignore = (REPO / "Dockerfile").read_text(), (REPO / ".dockerignore").read_text()
    src = stage_tree(REPO, base / "fs", dockerfile, ignore)
    _run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "-w", str(base / "w"), str(src)])
    (wheel,) = (base / "w").glob("gpu_reclaim-*.whl")
    _run([sys.executable, "-m", "venv", str(base / "venv")])
    _run([str(base / "venv" / "bin" / "python"), "-m", "pip", "install", "-q", str(wheel)])
    return base / "venv" / "bin"


def clean_env() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if not k.startswith(("PYTHON", "VIRTUAL_ENV"))}


def _run(argv: list[str]) -> None:
    done = subprocess.run(argv, capture_output=True, text=True, timeout=600, check=False)
    assert done.returncode == 0, f"{argv}: {done.stdout}\n{done.stderr}"
