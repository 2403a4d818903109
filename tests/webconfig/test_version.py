"""`--version` on both commands: version, revision where known, Python version."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from repo_paths import REPO

from webconfig.version import git_revision, version_text

SHA = "0123456789abcdef0123456789abcdef01234567"


def test_a_loose_ref(tmp_path: Path) -> None:
    (tmp_path / ".git" / "refs" / "heads").mkdir(parents=True)
    (tmp_path / ".git" / "HEAD").write_text("ref: refs/heads/main\n")
    (tmp_path / ".git" / "refs" / "heads" / "main").write_text(SHA + "\n")
    assert git_revision(tmp_path) == SHA[:12]


def test_a_packed_ref_and_a_detached_head(tmp_path: Path) -> None:
    (tmp_path / ".git").mkdir()
    (tmp_path / ".git" / "HEAD").write_text("ref: refs/heads/main\n")
    (tmp_path / ".git" / "packed-refs").write_text(f"# pack-refs\n{SHA} refs/heads/main\n")
    assert git_revision(tmp_path) == SHA[:12]
    (tmp_path / ".git" / "HEAD").write_text(SHA + "\n")
    assert git_revision(tmp_path) == SHA[:12]


def test_a_worktree_reads_the_common_refs(tmp_path: Path) -> None:
    common = tmp_path / "main.git"
    (common / "refs" / "heads").mkdir(parents=True)
    (common / "refs" / "heads" / "wt").write_text(SHA)
    private = common / "worktrees" / "wt"
    private.mkdir(parents=True)
    (private / "HEAD").write_text("ref: refs/heads/wt\n")
    (private / "commondir").write_text("../..\n")
    tree = tmp_path / "wt"
    tree.mkdir()
    (tree / ".git").write_text(f"gitdir: {private}\n")
    assert git_revision(tree) == SHA[:12]


def test_no_checkout_is_no_revision(tmp_path: Path) -> None:
    assert git_revision(tmp_path) == ""


def test_the_image_revision_wins() -> None:
    text = version_text("gpu-exporter", {"GPU_RECLAIM_REVISION": "feedface"})
    first, python, _platform = text.splitlines()
    assert first.startswith("gpu-exporter, version 0.1.0 (revision: feedface)")
    assert python.split() == ["python", "version:", "CPython", sys.version.split()[0]]


@pytest.mark.parametrize("module", ["exporter", "reclaimer"])
def test_both_commands_print_it_and_exit_0(module: str) -> None:
    done = subprocess.run(
        [sys.executable, "-m", module, "--version"],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    prog = {"exporter": "gpu-exporter", "reclaimer": "gpu-reclaimer"}[module]
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith(f"{prog}, version 0.1.0 (revision: ")
    assert "python version:" in done.stdout
