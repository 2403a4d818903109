"""`gpu-reclaimer traces fetch` against a publisher served on loopback, and from a local mirror.

The loopback server serves the publishers' repositories' paths (`/<owner>/<repo>/<commit>/<path>`)
with the files the shared traces hold unchanged (the openb CSVs) or can be unpacked to exactly
(the helios CSV, gzip-compressed there), so the catalog's real sha256s are what is checked. The
GenTD26 archive cannot be rebuilt from any stored copy (the publisher's tar and gzip headers are
not stored, and CI's copy is a subset): served packed here, its checksum is wrong, which is the
refusal case. The archive path itself is checked with a catalog entry made here from a tar.gz
whose hashes the test computes. What the mirror case expects of each file follows from the copy
there (`shared_traces.mirror_verdicts`): the publisher's content, a known subset, or refused.
"""

from __future__ import annotations

import gzip
import hashlib
import http.server
import io
import tarfile
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from promserver import free_port
from shared_traces import mirror_verdicts

from reclaimer.cli import main
from reclaimer.traces.catalog import GENTD26, HELIOS_PHILLY, OPENB, Packing, Role, TraceFile
from reclaimer.traces.fetch import FetchError, Source, fetch, stored_content

GIVE_UP_S = 60.0  # the local publisher answers at once; only a hung one takes this long


class _Publisher(http.server.ThreadingHTTPServer):
    files: dict[str, bytes]
    requests: list[str]


class _Handler(http.server.BaseHTTPRequestHandler):
    server: _Publisher

    def do_GET(self) -> None:
        self.server.requests.append(self.path)
        body = self.server.files.get(self.path)
        if body is None:
            self.send_error(404)
            return
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def publisher() -> Iterator[_Publisher]:
    server = _Publisher(("127.0.0.1", 0), _Handler)
    server.files, server.requests = {}, []
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield server
    server.shutdown()
    server.server_close()


def _url_path(file: TraceFile) -> str:
    return file.url("http://x").removeprefix("http://x")


def _serve_published(server: _Publisher, shared: Path) -> None:
    for file in OPENB.files:
        server.files[_url_path(file)] = (shared / file.stored).read_bytes()
    (helios,) = HELIOS_PHILLY.files
    server.files[_url_path(helios)] = gzip.decompress((shared / helios.stored).read_bytes())
    for file in GENTD26.files:  # the stored CSV, packed as the publisher packs: not their bytes
        csv = gzip.decompress((shared / file.stored).read_bytes())
        server.files[_url_path(file)] = packed = _tar_gz(file.member, csv)
        assert hashlib.sha256(packed).hexdigest() != file.sha256


def _tar_gz(member: str, data: bytes) -> bytes:
    out = io.BytesIO()
    with tarfile.open(fileobj=out, mode="w:gz") as archive:
        info = tarfile.TarInfo(member)
        info.size = len(data)
        archive.addfile(info, io.BytesIO(data))
    return out.getvalue()


def _url(server: _Publisher) -> str:
    return f"http://127.0.0.1:{server.server_address[1]}"


def test_fetch_writes_the_publishers_files_and_refuses_a_checksum_mismatch(
    publisher: _Publisher, shared_data: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _serve_published(publisher, shared_data)
    cache = tmp_path / "cache"
    code = main(["traces", "fetch", "--dir", str(cache), "--source-url", _url(publisher)])
    out, err = capsys.readouterr()
    assert code == 1  # the GenTD26 archives are not the publisher's bytes
    for file in (*OPENB.files, *HELIOS_PHILLY.files):
        assert stored_content(cache / file.stored)[0] == file.content_sha256
        assert f"downloaded  {cache / file.stored}" in out
    for file in GENTD26.files:
        assert f"sha256 {hashlib.sha256(publisher.files[_url_path(file)]).hexdigest()}" in err
        assert "refused, not kept" in err
    assert not (cache / "alibaba-gentd26").exists() or not any(
        (cache / "alibaba-gentd26").iterdir()
    )
    assert f"{len(GENTD26.files)} file(s) not fetched" in err
    assert "Weng et al." in out and "research or study" in out.replace("reseach", "research")


def test_a_second_fetch_downloads_nothing(
    publisher: _Publisher, shared_data: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _serve_published(publisher, shared_data)
    argv = ["traces", "fetch", "--dir", str(tmp_path), "--source-url", _url(publisher)]
    main(argv)
    first = len(publisher.requests)
    capsys.readouterr()
    main(argv)
    out = capsys.readouterr().out
    assert len(publisher.requests) == first + len(GENTD26.files)  # only the refused ones again
    assert out.count("already present") == len(OPENB.files) + len(HELIOS_PHILLY.files)


def test_an_unreachable_host_is_a_clear_error_and_exit_1(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    url = f"http://127.0.0.1:{free_port()}"
    code = main(["traces", "fetch", "--dir", str(tmp_path / "c"), "--source-url", url])
    err = capsys.readouterr().err
    assert code == 1
    assert f"cannot reach {url}/alibaba/clusterdata/" in err
    assert not (tmp_path / "c").exists() or not any((tmp_path / "c").rglob("*.*"))


def test_the_mirror_is_used_without_the_network(
    shared_data: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    url = f"http://127.0.0.1:{free_port()}"  # nothing listens: any download would fail
    code = main(["traces", "fetch", "--dir", str(tmp_path), "--mirror", str(shared_data),
                 "--source-url", url])  # fmt: skip
    out, err = capsys.readouterr()
    verdicts = mirror_verdicts(shared_data)
    for file, subset in verdicts.items():
        if subset is None:
            assert f"{shared_data / file.stored}: sha256 " in err
            assert f"neither the publisher's content ({file.content_sha256})" in err
            assert not (tmp_path / file.stored).exists()
        else:
            note = f" ({subset} of the publisher's file)" if subset else ""
            assert f"copied from the mirror  {tmp_path / file.stored}{note}\n" in out
    assert out.count("copied from the mirror") == sum(v is not None for v in verdicts.values())
    assert "cannot reach" not in err
    assert code == (1 if None in verdicts.values() else 0)


def test_fetch_stores_the_model_load_times_simulate_reads_by_default(
    shared_data: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """GenTD26's base-model load times (the replay's cold starts) are fetched with the rest."""
    url = f"http://127.0.0.1:{free_port()}"  # nothing listens: the mirror's copy is taken
    main(["traces", "fetch", "--dir", str(tmp_path), "--mirror", str(shared_data),
          "--source-url", url])  # fmt: skip
    (entry,) = [f for f in GENTD26.files if f.stored == Role.COLD_START.value]
    stored = tmp_path / Role.COLD_START.value

    assert entry.path == "cluster-trace-v2026-GenAI/basemodel_update_latency_anon.tar.gz"
    assert entry.member == "basemodel_update_latency_anon.csv"
    assert stored_content(stored) == (entry.content_sha256, "")  # the publisher's whole file
    assert f"copied from the mirror  {stored}\n" in capsys.readouterr().out


def _archive_entry(tmp_path: Path, csv: bytes, published: bytes) -> TraceFile:
    return TraceFile(
        stored="t/x.csv.gz",
        repo="o/r",
        commit="c" * 40,
        path="d/x_anon.tar.gz",
        sha256=hashlib.sha256(published).hexdigest(),
        size=len(published),
        packing=Packing.TAR_MEMBER_GZIP,
        content_sha256=hashlib.sha256(csv).hexdigest(),
        member="x_anon.csv",
    )


def test_an_archive_is_unpacked_to_its_csv_and_checked(
    publisher: _Publisher, tmp_path: Path
) -> None:
    csv = b"value,timestamp_anon,container_ip\n0.0,1.0,a\n"
    published = _tar_gz("x_anon.csv", csv)
    entry = _archive_entry(tmp_path, csv, published)
    publisher.files[_url_path(entry)] = published
    got = fetch(entry, tmp_path, mirror=None, source_url=_url(publisher), timeout=GIVE_UP_S)
    assert got.source is Source.DOWNLOAD
    assert gzip.decompress(got.path.read_bytes()) == csv
    assert sorted(p.name for p in got.path.parent.iterdir()) == ["x.csv.gz"]


def test_an_archive_whose_csv_differs_is_refused_and_nothing_is_kept(
    publisher: _Publisher, tmp_path: Path
) -> None:
    published = _tar_gz("x_anon.csv", b"other\n")
    entry = _archive_entry(tmp_path, b"expected\n", published)  # archive ok, content not
    publisher.files[_url_path(entry)] = published
    with pytest.raises(FetchError, match="unpacked content sha256"):
        fetch(entry, tmp_path, mirror=None, source_url=_url(publisher), timeout=GIVE_UP_S)
    assert list((tmp_path / "t").iterdir()) == []


def test_a_body_longer_than_published_is_refused(publisher: _Publisher, tmp_path: Path) -> None:
    csv = b"a\n"
    published = _tar_gz("x_anon.csv", csv)
    entry = _archive_entry(tmp_path, csv, published)
    publisher.files[_url_path(entry)] = published + b"\0" * 10
    with pytest.raises(FetchError, match="larger than"):
        fetch(entry, tmp_path, mirror=None, source_url=_url(publisher), timeout=GIVE_UP_S)
    assert list((tmp_path / "t").iterdir()) == []
