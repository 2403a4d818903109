"""Fetch one trace file: download (or copy from a local mirror), check its sha256, store it whole.

Nothing half-written is ever kept: every file is written under a temporary name in the folder it
belongs to and renamed into place only once both checks pass (the published bytes against
`sha256`, then the stored CSV against `content_sha256`); on any failure the temporary files are
removed. A file already stored with the right content is left alone, so a second run fetches
nothing. Stored gzip files carry no timestamp, so the same content is the same bytes.
"""

from __future__ import annotations

import contextlib
import enum
import gzip
import hashlib
import os
import shutil
import tarfile
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import IO

from reclaimer.traces.catalog import MIRROR_SUBSETS, Packing, TraceFile

CHUNK = 1 << 16


class FetchError(Exception):
    """A file could not be fetched or failed its check; nothing of it was kept."""


class Source(enum.StrEnum):
    PRESENT = "already present"
    MIRROR = "copied from the mirror"
    DOWNLOAD = "downloaded"


@dataclass(frozen=True)
class Fetched:
    file: TraceFile
    path: Path
    source: Source
    subset: str = ""  # a mirror's known subset of the publisher's file, by name


def stored_content(path: Path) -> tuple[str, str]:
    """(sha256 of the CSV a stored file holds, the subset it is, or '') or ('', '') if absent."""
    if not path.is_file():
        return "", ""
    opener: Callable[[Path], IO[bytes]] = _open_gzip if path.suffix == ".gz" else _open_plain
    digest = hashlib.sha256()
    try:
        with opener(path) as stream:
            for chunk in iter(lambda: stream.read(CHUNK), b""):
                digest.update(chunk)
    except (OSError, EOFError) as exc:
        raise FetchError(f"{path}: unreadable: {exc}") from exc
    sha = digest.hexdigest()
    return sha, MIRROR_SUBSETS.get(sha, "")


def fetch(
    file: TraceFile, root: Path, *, mirror: Path | None, source_url: str, timeout: float
) -> Fetched:
    """Store `file` under `root`: keep a good copy, else copy the mirror's, else download it."""
    target = root / file.stored
    if _acceptable(file, target):
        return Fetched(file, target, Source.PRESENT, stored_content(target)[1])
    if mirror is not None and (mirror / file.stored).is_file():
        return _from_mirror(file, mirror / file.stored, target)
    return _download(file, target, source_url, timeout)


def _acceptable(file: TraceFile, path: Path) -> bool:
    sha, subset = stored_content(path)
    return sha == file.content_sha256 or bool(subset)


def _from_mirror(file: TraceFile, source: Path, target: Path) -> Fetched:
    sha, subset = stored_content(source)
    if sha != file.content_sha256 and not subset:
        raise FetchError(
            f"{source}: sha256 {sha} is neither the publisher's content "
            f"({file.content_sha256}) nor a known subset of it: refused"
        )
    with _staged(target) as part, open(source, "rb") as src, open(part, "wb") as dst:
        shutil.copyfileobj(src, dst)
    return Fetched(file, target, Source.MIRROR, subset)


def _download(file: TraceFile, target: Path, source_url: str, timeout: float) -> Fetched:
    url = file.url(source_url)
    with _scratch(target) as raw:
        sha = _download_to(url, raw, file.size, timeout)
        if sha != file.sha256:
            raise FetchError(f"{url}: sha256 {sha}, expected {file.sha256}: refused, not kept")
        with _staged(target) as part:
            content = _unpack(file, raw, part)
            if content != file.content_sha256:
                raise FetchError(
                    f"{url}: unpacked content sha256 {content}, expected "
                    f"{file.content_sha256}: refused, not kept"
                )
    return Fetched(file, target, Source.DOWNLOAD)


def _download_to(url: str, part: Path, size: int, timeout: float) -> str:
    digest, got = hashlib.sha256(), 0
    try:
        with urllib.request.urlopen(url, timeout=timeout) as answer, open(part, "wb") as out:
            for chunk in iter(lambda: answer.read(CHUNK), b""):
                got += len(chunk)
                if got > size:
                    raise FetchError(f"{url}: larger than the {size} bytes published: refused")
                digest.update(chunk)
                out.write(chunk)
    except urllib.error.HTTPError as exc:
        raise FetchError(f"{url}: HTTP {exc.code} {exc.reason}") from exc
    except urllib.error.URLError as exc:
        raise FetchError(f"cannot reach {url}: {exc.reason}") from exc
    except (OSError, ValueError) as exc:  # a reset, a timeout mid-body, a malformed URL
        raise FetchError(f"{url}: {exc}") from exc
    return digest.hexdigest()


def _unpack(file: TraceFile, raw: Path, part: Path) -> str:
    """Write the stored form of the downloaded `raw` to `part`; the sha256 of its CSV."""
    digest = hashlib.sha256()
    with _source_stream(file, raw) as src, _sink(file, part) as dst:
        for chunk in iter(lambda: src.read(CHUNK), b""):
            digest.update(chunk)
            dst.write(chunk)
    return digest.hexdigest()


@contextlib.contextmanager
def _source_stream(file: TraceFile, raw: Path) -> Iterator[IO[bytes]]:
    if file.packing is not Packing.TAR_MEMBER_GZIP:
        with open(raw, "rb") as plain:
            yield plain
        return
    try:
        with tarfile.open(raw, "r:gz") as archive:
            member = archive.getmember(file.member)
            stream = archive.extractfile(member) if member.isfile() else None
            if stream is None:
                raise FetchError(f"{file.path}: {file.member} is not a regular file")
            yield stream
    except (tarfile.TarError, KeyError, EOFError, OSError) as exc:
        raise FetchError(f"{file.path}: cannot read {file.member} from the archive: {exc}") from exc


@contextlib.contextmanager
def _sink(file: TraceFile, part: Path) -> Iterator[IO[bytes]]:
    with open(part, "wb") as out:
        if file.packing is Packing.AS_IS:
            yield out
        else:
            with gzip.GzipFile(filename="", mode="wb", fileobj=out, mtime=0) as packed:
                yield packed  # type: ignore[misc]


@contextlib.contextmanager
def _staged(target: Path) -> Iterator[Path]:
    """A temporary path beside `target`, renamed onto it on success and removed on failure."""
    target.parent.mkdir(parents=True, exist_ok=True)
    part = target.with_name(f".{target.name}.{os.getpid()}.part")
    try:
        yield part
        if part.exists():
            os.replace(part, target)
    finally:
        part.unlink(missing_ok=True)


@contextlib.contextmanager
def _scratch(target: Path) -> Iterator[Path]:
    """A temporary path beside `target`, always removed."""
    target.parent.mkdir(parents=True, exist_ok=True)
    scratch = target.with_name(f".{target.name}.{os.getpid()}.download")
    try:
        yield scratch
    finally:
        scratch.unlink(missing_ok=True)


def _open_gzip(path: Path) -> IO[bytes]:
    return gzip.open(path, "rb")  # type: ignore[return-value]


def _open_plain(path: Path) -> IO[bytes]:
    return open(path, "rb")
