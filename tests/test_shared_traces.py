"""Where the public traces are read from: by the tests (`tests/shared_traces.py` and the
`shared_data` fixture, with its cut), by CI (`.ci/run` demands them) and by the benchmarks.

The fixture is run as a checkout on a clean machine has it: the tests' conftest copied into a
folder with nothing beside it (no `../shared`), the `traces fetch` folder pointed at an empty
place, and pytest run there in a subprocess.
"""

from __future__ import annotations

import gzip
import os
import re
import runpy
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from repo_paths import REPO
from shared_traces import REQUIRE, TracesMissing, lacking, locate, pods, write_cut

from reclaimer.traces.catalog import Role

UTIL_HEADER = "value,timestamp_anon,container_ip\n"
MEMORY_HEADER = "timestamp_anon,value,container_ip\n"


def _gz(path: Path, lines: list[str]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(gzip.compress("".join(lines).encode()))


def _traces(folder: Path, pod_ids: list[str], leave_out: tuple[Role, ...] = ()) -> Path:
    """A traces folder in the stored layout; GenTD26 rows for `pod_ids`, in their order."""
    for role in Role:
        if role in leave_out:
            continue
        path = folder / role.value
        if role is Role.UTILIZATION:
            _gz(path, [UTIL_HEADER, *(f"1.50,{60.0 * i},{p}\n" for i, p in enumerate(pod_ids))])
        elif role is Role.MEMORY:
            _gz(path, [MEMORY_HEADER, *(f"{60.0 * i},2e9,{p}\n" for i, p in enumerate(pod_ids))])
        else:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(f"{role.name}\n")
    return folder


@pytest.mark.parametrize(
    ("mirror_lacks", "fetched", "want"),
    [((), True, "mirror"), ((Role.UTILIZATION,), True, "fetched"), ((), False, "mirror")],
    ids=["mirror-first", "partial-mirror-passed-over", "mirror-only"],
)
def test_locate_takes_the_first_copy_holding_every_file(
    tmp_path: Path, mirror_lacks: tuple[Role, ...], fetched: bool, want: str
) -> None:
    _traces(tmp_path / "mirror", ["a"], mirror_lacks)
    if fetched:
        _traces(tmp_path / "fetched", ["a"])
    env = {"GPU_RECLAIM_TRACES": str(tmp_path / "fetched")}
    assert locate(tmp_path / "mirror", env, tmp_path) == tmp_path / want


def test_locate_names_what_each_copy_lacks(tmp_path: Path) -> None:
    _traces(tmp_path / "mirror", ["a"], (Role.MEMORY, Role.NODES))
    env = {"GPU_RECLAIM_TRACES": str(tmp_path / "fetched")}
    with pytest.raises(TracesMissing) as missing:
        locate(tmp_path / "mirror", env, tmp_path)
    assert str(missing.value) == (
        f"no traces: {tmp_path / 'mirror'} lacks {Role.NODES.value}, {Role.MEMORY.value}; "
        f"{tmp_path / 'fetched'} does not exist: run `gpu-reclaimer traces fetch`"
    )


def test_a_cut_keeps_the_rows_of_the_smallest_pod_ids_as_they_were(tmp_path: Path) -> None:
    source = _traces(tmp_path / "source", ["c", "a", "d", "b", "a"])
    cut = write_cut(source, tmp_path / "cut", 2)
    util = gzip.decompress((cut / Role.UTILIZATION.value).read_bytes()).decode()
    assert util == UTIL_HEADER + "1.50,60.0,a\n1.50,180.0,b\n1.50,240.0,a\n"  # text unchanged
    memory = gzip.decompress((cut / Role.MEMORY.value).read_bytes()).decode()
    assert memory == MEMORY_HEADER + "60.0,2e9,a\n180.0,2e9,b\n240.0,2e9,a\n"
    for role in (Role.PODS, Role.NODES, Role.NODE_SEQUENCE):
        assert (cut / role.value).is_symlink()
        assert (cut / role.value).resolve() == (source / role.value).resolve()
    assert lacking(cut) == []


PROBE = """
def test_probe(shared_data, request):
    print("PROBE", request.node.callspec.id, shared_data)
"""


def _run_clean_checkout(tmp_path: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    """pytest on a probe test in a checkout's copy at tmp_path/clone, nothing beside it but what
    the test puts there."""
    tests = tmp_path / "clone" / "tests"
    tests.mkdir(parents=True)
    for name in ("conftest.py", "repo_paths.py", "shared_traces.py"):
        shutil.copy(REPO / "tests" / name, tests / name)
    (tests / "test_probe.py").write_text(PROBE)
    inherited = {k: v for k, v in os.environ.items() if not k.startswith(("GPU_RECLAIM", "XDG"))}
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-s", "-rs", "tests"],
        cwd=tmp_path / "clone",
        env=inherited | {"PYTHONPATH": str(REPO), "HOME": str(tmp_path), "COLUMNS": "400"} | env,
        capture_output=True, text=True, timeout=300, check=False,
    )  # fmt: skip


@pytest.mark.slow
@pytest.mark.parametrize(
    ("require", "outcome", "code"), [("", "2 skipped", 0), ("1", "2 errors", 1)],
    ids=["skipped", "failed-when-required"],
)  # fmt: skip
def test_without_traces_the_fixture_names_them_and_fails_when_required(
    tmp_path: Path, require: str, outcome: str, code: int
) -> None:
    fetched = tmp_path / "fetched"
    done = _run_clean_checkout(tmp_path, {"GPU_RECLAIM_TRACES": str(fetched), REQUIRE: require})
    reason = (
        f"no traces: {tmp_path / 'shared' / 'data'} does not exist; {fetched} does not exist: "
        "run `gpu-reclaimer traces fetch`"
    )
    assert reason + (f" ({REQUIRE}=1)" if require else "") in done.stdout
    assert re.search(rf"\b{outcome} in ", done.stdout), done.stdout
    assert "PROBE" not in done.stdout
    assert done.returncode == code


@pytest.mark.slow
def test_every_trace_test_runs_on_the_copy_found_and_on_its_cut(tmp_path: Path) -> None:
    mirror = _traces(tmp_path / "shared" / "data", [f"pod-{i:03d}" for i in range(80, 10, -1)])
    env = {"GPU_RECLAIM_TRACES": str(tmp_path / "fetched"), REQUIRE: "1"}
    done = _run_clean_checkout(tmp_path, env)
    assert re.search(r"\b2 passed in ", done.stdout), done.stdout
    probes = dict(re.findall(r"PROBE (\S+) (\S+)", done.stdout))
    assert probes.keys() == {"found", "50-pod-cut"}
    assert probes["found"] == str(mirror)
    cut = Path(probes["50-pod-cut"])
    assert pods(cut / Role.UTILIZATION.value) == [f"pod-{i:03d}" for i in range(11, 61)]


def test_ci_runs_make_test_requiring_the_traces(tmp_path: Path) -> None:
    stub = tmp_path / "bin" / "make"  # stands in for make: records what .ci/run asked of it
    stub.parent.mkdir()
    stub.write_text('#!/bin/sh\necho "$GPU_RECLAIM_REQUIRE_TRACES $*" > "$MAKE_CALL"\n')
    stub.chmod(0o755)
    env = {k: v for k, v in os.environ.items() if k != REQUIRE}
    env |= {"PATH": f"{stub.parent}:{env['PATH']}", "MAKE_CALL": str(tmp_path / "call")}
    done = subprocess.run(
        ["bash", str(REPO / ".ci" / "run")], env=env, capture_output=True, text=True, check=False
    )
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "call").read_text() == "1 test\n"


@pytest.mark.parametrize(
    ("script", "stored"),
    [("seasonal_bench.py", Role.NODE_SEQUENCE.value), ("simulate_bench.py", ""),
     ("simulate_table.py", "")],
)  # fmt: skip
def test_benchmarks_read_the_folder_traces_fetch_writes(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    script: str,
    stored: str,
) -> None:
    monkeypatch.setenv("GPU_RECLAIM_TRACES", str(tmp_path / "traces"))
    monkeypatch.setenv("COLUMNS", "400")  # help lines unwrapped
    monkeypatch.setattr(sys, "argv", [script, "--help"])
    with pytest.raises(SystemExit) as exited:
        runpy.run_path(str(REPO / "bench" / script), run_name="__main__")
    assert exited.value.code == 0
    assert f"(default {tmp_path / 'traces' / stored})" in capsys.readouterr().out
