"""`gpu-reclaimer traces`: fetch the public traces `simulate` replays into a cache folder.

`traces fetch` downloads each file from its publisher's repository at the pinned commit, checks
its sha256 and stores it under `--dir` (default `$GPU_RECLAIM_TRACES`, else the user's cache
folder); `--mirror DIR` (or `$GPU_RECLAIM_TRACES_MIRROR`) names a local copy in the same layout,
used instead of the network for the files it holds. It prints the papers to cite and the terms of
use. Exit 0 when every file is stored, 1 when one could not be fetched or failed its check (the
others are kept), 2 on bad flags. `traces list` prints where each file comes from.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from reclaimer.traces.catalog import DEFAULT_SOURCE_URL, GENTD26, HELIOS_PHILLY, OPENB, Trace
from reclaimer.traces.catalog import default_cache_dir as _default_cache_dir
from reclaimer.traces.fetch import FetchError, fetch
from reclaimer.traces.openb_variants import OPENB_VARIANTS

TRACES: tuple[Trace, ...] = (OPENB, GENTD26, HELIOS_PHILLY, OPENB_VARIANTS)


def default_cache_dir() -> Path:
    return _default_cache_dir(os.environ, Path.home())


def add_arguments(parser: argparse.ArgumentParser) -> None:
    sub = parser.add_subparsers(dest="traces_command", required=True, metavar="ACTION")
    get = sub.add_parser("fetch", help="download the traces, checked by sha256")
    get.add_argument(
        "--dir", type=Path, default=None, help=f"cache folder (default {default_cache_dir()})"
    )
    get.add_argument(
        "--mirror",
        type=Path,
        default=os.environ.get("GPU_RECLAIM_TRACES_MIRROR") or None,
        help="local copy in the same layout, used instead of the network where it has a file "
        "(default $GPU_RECLAIM_TRACES_MIRROR)",
    )
    get.add_argument(
        "--source-url",
        default=DEFAULT_SOURCE_URL,
        help=f"where the publishers' repositories are served (default {DEFAULT_SOURCE_URL})",
    )
    get.add_argument("--variants", action="store_true", help="also the openb pod list variants")
    get.add_argument("--timeout", type=float, default=60.0, help="seconds per request")
    sub.add_parser("list", help="print each file's publisher, commit and sha256")


def run(args: argparse.Namespace) -> int:
    if args.traces_command == "list":
        return _list()
    root: Path = args.dir or default_cache_dir()
    if args.mirror is not None and not args.mirror.is_dir():
        print(f"gpu-reclaimer traces: --mirror {args.mirror}: not a folder", file=sys.stderr)
        return 2
    wanted = [t for t in TRACES if args.variants or not t.optional]
    failed = 0
    for trace in wanted:
        for file in trace.files:
            try:
                got = fetch(
                    file, root, mirror=args.mirror, source_url=args.source_url, timeout=args.timeout
                )
            except FetchError as exc:
                failed += 1
                print(f"gpu-reclaimer traces: {exc}", file=sys.stderr)
                continue
            note = f" ({got.subset} of the publisher's file)" if got.subset else ""
            print(f"{got.source.value:>22}  {got.path}{note}")
    _terms(wanted)
    if failed:
        print(f"gpu-reclaimer traces: {failed} file(s) not fetched", file=sys.stderr)
        return 1
    print(f"traces in {root}: `gpu-reclaimer simulate` reads them when given no --pods/--nodes")
    return 0


def _terms(traces: list[Trace]) -> None:
    print("\nCite, and keep to the publishers' terms (the traces are not redistributed here):")
    for trace in traces:
        print(f"- {trace.name}: {trace.title}\n    cite: {trace.cite}\n    terms: {trace.terms}")


def _list() -> int:
    for trace in TRACES:
        extra = " (--variants)" if trace.optional else ""
        print(f"{trace.name}{extra}: {trace.title}")
        for f in trace.files:
            print(f"  {f.stored}\n    {f.url()}\n    sha256 {f.sha256}, {f.size} bytes")
    return 0
