"""The `--version` text of both commands, in the Prometheus exporters' form (prometheus/common's
`version.Print`): the program and version, then the revision, the Python version and the platform.

The version is the installed distribution's (`gpu-reclaim`). The revision is known when the image
was built with one (`GPU_RECLAIM_REVISION`, set from the Dockerfile's `REVISION` build argument)
or when the code runs from a git checkout (its HEAD, read from `.git`, no git binary needed);
otherwise it says `unknown`.
"""

from __future__ import annotations

import argparse
import os
import platform
import sys
from collections.abc import Mapping
from importlib import metadata
from pathlib import Path

DISTRIBUTION = "gpu-reclaim"


def add_version_argument(parser: argparse.ArgumentParser, prog: str) -> None:
    """`--version`: print `version_text(prog)` unwrapped and exit 0 (argparse's own rewraps it)."""
    parser.add_argument(
        "--version", action=_PrintVersion, nargs=0, default=argparse.SUPPRESS, prog_name=prog,
        help="print the version, revision and Python version, then exit",
    )  # fmt: skip


class _PrintVersion(argparse.Action):
    def __init__(self, *args: object, prog_name: str, **kwargs: object) -> None:
        super().__init__(*args, **kwargs)  # type: ignore[arg-type]
        self.prog_name = prog_name

    def __call__(self, parser: argparse.ArgumentParser, *_: object) -> None:
        print(version_text(self.prog_name))
        parser.exit(0)


def version_text(prog: str, env: Mapping[str, str] | None = None) -> str:
    env = os.environ if env is None else env
    try:
        version = metadata.version(DISTRIBUTION)
    except metadata.PackageNotFoundError:
        version = "unknown (not installed)"
    revision = env.get("GPU_RECLAIM_REVISION") or git_revision(Path(__file__).parent.parent)
    machine = {"x86_64": "amd64", "aarch64": "arm64"}.get(platform.machine(), platform.machine())
    return (
        f"{prog}, version {version} (revision: {revision or 'unknown'})\n"
        f"  python version:   {platform.python_implementation()} {platform.python_version()}\n"
        f"  platform:         {sys.platform}/{machine}"
    )


def git_revision(tree: Path) -> str:
    """The commit a git checkout at `tree` has out, or '' when it is none (an installed wheel)."""
    git = tree / ".git"
    if git.is_file():  # a worktree: "gitdir: <path>"
        text = git.read_text(encoding="utf-8", errors="replace").strip()
        git = Path(text.removeprefix("gitdir: ")) if text.startswith("gitdir: ") else git
    try:
        head = (git / "HEAD").read_text(encoding="utf-8").strip()
        if not head.startswith("ref: "):
            return head[:12]
        ref = head.removeprefix("ref: ")
        common = _common_dir(git)
        for root in (git, common):
            if (root / ref).is_file():
                return (root / ref).read_text(encoding="utf-8").strip()[:12]
        return _packed_ref(common, ref)
    except OSError:
        return ""


def _common_dir(git: Path) -> Path:
    try:
        text = (git / "commondir").read_text(encoding="utf-8").strip()
    except OSError:
        return git
    return (git / text).resolve()


def _packed_ref(git: Path, ref: str) -> str:
    for line in (git / "packed-refs").read_text(encoding="utf-8").splitlines():
        sha, _, name = line.partition(" ")
        if name == ref:
            return sha[:12]
    return ""
