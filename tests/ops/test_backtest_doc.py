"""docs/backtest.md's "from an empty folder" block, run as written after the clone and install.

The block's `gpu-reclaimer` lines run from a folder outside the checkout: `traces fetch` and the
first `simulate` with the image's environment (the wheel and its runtime deps, as `pip install .`
gives); the `--report` line's flags are checked against the parser (a real `--report` run is
test_html_report's). The traces come from the tests' copy of them (`shared_data`) passed as the
mirror (`GPU_RECLAIM_TRACES_MIRROR`), the network being closed here; the download path itself is
tested in test_traces.py.
"""

from __future__ import annotations

import re
import shlex
import subprocess
import tomllib
from pathlib import Path

import pytest
from imagebuild import clean_env
from repo_paths import REPO

from reclaimer.cli import build_parser

pytestmark = pytest.mark.slow


def _block() -> list[list[str]]:
    text = (REPO / "docs" / "backtest.md").read_text()
    start = text.index("From an empty folder")
    block = re.search(r"```sh\n(.*?)```", text[start:], re.S)
    assert block is not None
    return [shlex.split(line.split("  #")[0]) for line in block.group(1).splitlines() if line]


def test_the_block_installs_this_project_with_the_report_extra() -> None:
    clone, install, *_ = _block()
    assert clone[:2] == ["git", "clone"] and clone[-2:] == ["cd", "gpu-reclaim"]
    assert install[-3:] == [".venv/bin/pip", "install", ".[report]"]
    extras = tomllib.loads((REPO / "pyproject.toml").read_text())["project"][
        "optional-dependencies"
    ]
    assert "report" in extras


# `traces fetch --mirror` takes only the publisher's content or a known subset of it: the copy
# found, never the fixture's cut of it
@pytest.mark.parametrize("shared_data", ["found"], indirect=True)
def test_the_block_runs_as_written(image: Path, shared_data: Path, tmp_path: Path) -> None:
    *_, fetch, replay, report = _block()
    env = clean_env() | {"GPU_RECLAIM_TRACES": str(tmp_path / "traces"),
                         "GPU_RECLAIM_TRACES_MIRROR": str(shared_data)}  # fmt: skip
    for argv in (fetch, replay):
        assert argv[0] == ".venv/bin/gpu-reclaimer"
        done = subprocess.run(
            [str(image / "gpu-reclaimer"), *argv[1:]], cwd=tmp_path, env=env,
            capture_output=True, text=True, timeout=600, check=False,
        )  # fmt: skip
        assert done.returncode == 0, f"{argv}: {done.stderr}"
    table = dict(line.split(None, 1) for line in done.stdout.splitlines() if line.strip())
    assert table["strategy"] == "forecast"  # the replay the block names, not another
    assert float(table["gpu_hours_allocated"]) > 0  # it replayed the fetched traces' jobs
    assert float(table["gpu_hours_capacity"]) >= float(table["gpu_hours_allocated"])
    # the report line replays every strategy (test_html_report runs a real `--report`): here
    # its flags are checked against the parser, with the traces the block fetched
    assert report[0] == ".venv/bin/gpu-reclaimer"
    args = build_parser(report[1:]).parse_args(report[1:])
    assert args.report == Path("backtest.html") and args.pods is None
