"""Default trace files for `simulate` and `forecast-eval`: the ones `traces fetch` stored.

A flag left out (`--pods`, `--nodes`, `--utilization`, `--cold-start`) takes the file of that
role under `--traces-dir` (default: where `traces fetch` writes). A file that is not there is a
usage error that says how to get it.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from reclaimer.commands.traces import default_cache_dir
from reclaimer.traces.catalog import Role

FLAGS: dict[str, Role] = {
    "pods": Role.PODS,
    "nodes": Role.NODES,
    "utilization": Role.UTILIZATION,
    "cold_start": Role.COLD_START,
}


def add_traces_dir(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--traces-dir",
        type=Path,
        default=None,
        help="where a trace file not given by its flag is read from "
        f"(default: where `gpu-reclaimer traces fetch` writes, {default_cache_dir()})",
    )


def fill_defaults(args: argparse.Namespace, flags: tuple[str, ...]) -> str | None:
    """Set each of `flags` left unset to its stored trace; a problem for the user, or None."""
    root: Path = args.traces_dir or default_cache_dir()
    for flag in flags:
        if getattr(args, flag) is not None:
            continue
        path = root / FLAGS[flag].value
        option = "--" + flag.replace("_", "-")
        if not path.is_file():
            return (
                f"no {option} given and no {FLAGS[flag].value} in {root}: run "
                f"`gpu-reclaimer traces fetch` (or pass {option} FILE)"
            )
        setattr(args, flag, path)
    return None
