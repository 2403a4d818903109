"""`gpu-reclaimer` command line: one subcommand per job, each in its own module.

A subcommand module exposes `add_arguments(parser)` and `run(args) -> int` (the exit code).
Modules are imported only when their subcommand runs, so `forecast-eval` never loads Kubernetes.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Sequence

from webconfig.version import add_version_argument

SUBCOMMANDS: dict[str, tuple[str, str]] = {
    "run": ("reclaimer.commands.run", "run the controller (dry-run unless --apply)"),
    "forecast-eval": (
        "reclaimer.commands.forecast_eval",
        "evaluate idle-window forecasters on a trace",
    ),
    "simulate": ("reclaimer.commands.simulate", "replay a cluster trace under each reclaim policy"),
    "export-history": (
        "reclaimer.commands.export_history",
        "write the cluster's own history as a trace simulate replays",
    ),
    "traces": ("reclaimer.commands.traces", "fetch the public traces simulate replays"),
}


def build_parser(argv: Sequence[str]) -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="gpu-reclaimer", description=__doc__.splitlines()[0])
    add_version_argument(parser, "gpu-reclaimer")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    wanted = next((a for a in argv if not a.startswith("-")), None)
    for name, (module, help_) in SUBCOMMANDS.items():
        sp = sub.add_parser(name, help=help_)
        if name == wanted:
            importlib.import_module(module).add_arguments(sp)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args_list = list(sys.argv[1:] if argv is None else argv)
    args = build_parser(args_list).parse_args(args_list)
    module = importlib.import_module(SUBCOMMANDS[args.command][0])
    code: int = module.run(args)
    return code


if __name__ == "__main__":
    sys.exit(main())
