"""The public traces the tests read: where they are, what a copy lacks, and cuts of them.

`locate` looks first at CI's local mirror (`../shared/data` beside the checkout), then at the
folder `gpu-reclaimer traces fetch` writes (`reclaimer.traces.catalog.default_cache_dir`), and
takes the first that holds every file `simulate` reads by default (`catalog.Role`); when neither
does, its error names the files each one lacks. Copies differ in what they hold: CI's mirror has a
subset of the publisher's GenTD26 pods (rows filtered by pod, otherwise unchanged), a user's fetch
has them all. So the tests work out what to expect from the files that are there, and
`write_cut` makes one more copy, the GenTD26 rows of a few pods, through which the `shared_data`
fixture runs every trace test again: a test tied to the pods of one copy fails there.

`mirror_verdicts` says, file by file, what `traces fetch --mirror` will make of a copy (the
publisher's content, a known subset, or refused), from the catalog's sha256s.

`GPU_RECLAIM_REQUIRE_TRACES=1` (`.ci/run` sets it) turns missing traces from a skip into a
failure: CI is meant to have its mirror, and a run that skipped every trace test would pass
without having tested them.
"""

from __future__ import annotations

import gzip
import hashlib
from collections.abc import Mapping
from pathlib import Path

from reclaimer.traces.catalog import (
    GENTD26,
    HELIOS_PHILLY,
    MIRROR_SUBSETS,
    OPENB,
    Role,
    TraceFile,
    default_cache_dir,
)

REQUIRE = "GPU_RECLAIM_REQUIRE_TRACES"
POD_COLUMN = "container_ip"  # GenTD26's (hashed) pod id
CUT_FILES = (Role.UTILIZATION.value, Role.MEMORY.value)  # the per-pod files, cut by pod
FETCHED = (*OPENB.files, *GENTD26.files, *HELIOS_PHILLY.files)  # what `traces fetch` stores


class TracesMissing(Exception):
    """Neither CI's mirror nor the fetched folder holds every file the tests read."""


def required(env: Mapping[str, str]) -> bool:
    return env.get(REQUIRE, "") not in ("", "0")


def lacking(folder: Path) -> list[str]:
    """The files `simulate` reads by default that `folder` does not hold."""
    return [role.value for role in Role if not (folder / role.value).is_file()]


def locate(mirror: Path, env: Mapping[str, str], home: Path) -> Path:
    """CI's `mirror` if it holds every file, else the `traces fetch` folder if that does."""
    gaps = []
    for folder in (mirror, default_cache_dir(env, home)):
        missing = lacking(folder)
        if not missing:
            return folder
        held = f"lacks {', '.join(missing)}" if folder.is_dir() else "does not exist"
        gaps.append(f"{folder} {held}")
    raise TracesMissing(f"no traces: {'; '.join(gaps)}: run `gpu-reclaimer traces fetch`")


def pods(path: Path) -> list[str]:
    """The pod ids of a GenTD26 file, sorted."""
    header, *rows = _lines(path)
    column = _pod_column(header, path)
    return sorted({_field(row, column) for row in rows})


def write_cut(source: Path, target: Path, count: int) -> Path:
    """`target` made a copy of `source` whose GenTD26 per-pod files keep the rows, unchanged, of
    the `count` smallest pod ids of the utilization file, and nothing else: every other file is a
    link to the one in `source`."""
    keep = set(pods(source / Role.UTILIZATION.value)[:count])
    for path in sorted(p for p in source.rglob("*") if p.is_file()):
        stored = path.relative_to(source)
        out = target / stored
        out.parent.mkdir(parents=True, exist_ok=True)
        if stored.as_posix() not in CUT_FILES:
            out.symlink_to(path.resolve())
            continue
        header, *rows = _lines(path)
        column = _pod_column(header, path)
        kept = [header, *(row for row in rows if _field(row, column) in keep)]
        with gzip.GzipFile(out, "wb", mtime=0) as packed:
            packed.write("".join(kept).encode())
    return target


def content_sha256(path: Path) -> str:
    """sha256 of the CSV a stored file holds (gzip-decompressed where it is gzip)."""
    data = path.read_bytes()
    return hashlib.sha256(gzip.decompress(data) if path.suffix == ".gz" else data).hexdigest()


def mirror_verdicts(folder: Path) -> dict[TraceFile, str | None]:
    """What `traces fetch --mirror folder` makes of each file it stores: "" for the publisher's
    content, a subset's name (`catalog.MIRROR_SUBSETS`) for a known subset, None when refused."""
    verdicts: dict[TraceFile, str | None] = {}
    for file in FETCHED:
        sha = content_sha256(folder / file.stored)
        verdicts[file] = "" if sha == file.content_sha256 else MIRROR_SUBSETS.get(sha)
    return verdicts


def _lines(path: Path) -> list[str]:
    with gzip.open(path, "rt", newline="") as text:
        return text.readlines()


def _pod_column(header: str, path: Path) -> int:
    names = header.rstrip("\r\n").split(",")
    if POD_COLUMN not in names:
        raise ValueError(f"{path}: no {POD_COLUMN} column in {names}")
    return names.index(POD_COLUMN)


def _field(row: str, column: int) -> str:
    return row.rstrip("\r\n").split(",")[column]
