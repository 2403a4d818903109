"""`gpu-reclaimer run` from the command line: exit codes, messages, the printed plan."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml
from e2e_world import IDLE_JOB, cluster_objects, history, wall_now
from promserver import PromServer, free_port, start_prometheus

from reclaimer.cli import main


@pytest.fixture
def dump(tmp_path: Path) -> Path:
    path = tmp_path / "cluster.yaml"
    path.write_text(yaml.safe_dump_all(cluster_objects(wall_now())))
    return path


@pytest.fixture(scope="module")
def prom(tmp_path_factory: pytest.TempPathFactory) -> Iterator[PromServer]:
    work = tmp_path_factory.mktemp("prom")
    with start_prometheus(work, history=history(wall_now()), carry_on=True) as s:
        yield s


def closed_port_url() -> str:
    return f"http://127.0.0.1:{free_port()}"


@pytest.mark.parametrize(
    ("extra", "code", "message"),
    [
        pytest.param(["--apply"], 2, "--apply cannot be used with --cluster-file", id="apply-file"),
        pytest.param(["--interval", "soon"], 2, "", id="bad-interval"),
        pytest.param([], 1, "unreachable", id="prometheus-down"),
    ],
)
def test_exit_codes(
    dump: Path, extra: list[str], code: int, message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["run", "--once", "--prometheus-url", closed_port_url(), "--cluster-file", str(dump)]
    assert main([*argv, *extra]) == code
    assert message in capsys.readouterr().err


def test_malformed_policy_lists_every_error(
    dump: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    policy = tmp_path / "policy.yaml"
    policy.write_text("threshold: 2\nhorizon: -1\nlimits: {maxPreemptionsPerCycle: -3}\n")
    argv = ["run", "--once", "--prometheus-url", closed_port_url(), "--cluster-file", str(dump)]
    assert main([*argv, "--policy-file", str(policy)]) == 2
    err = capsys.readouterr().err
    assert "3 errors" in err
    for key in ("threshold", "horizon", "limits.maxPreemptionsPerCycle"):
        assert key in err


@pytest.mark.prometheus
def test_offline_plan_from_a_dump_prints_fleet_and_plan(
    prom: PromServer, dump: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["run", "--once", "--prometheus-url", prom.url, "--cluster-file", str(dump)]) == 0
    out = capsys.readouterr().out
    assert "Fleet: 4 GPU slots allocated (4 GPUs)" in out
    assert "idle in research: 2 GPU slots = 2 GPUs" in out
    assert IDLE_JOB in out and "preempt" in out
    assert (
        main(["run", "--once", "--json", "--prometheus-url", prom.url, "--cluster-file", str(dump)])
        == 0
    )
    report = json.loads(capsys.readouterr().out)
    assert report["plan"]["actions"][0]["target"] == IDLE_JOB
    assert report["outcomes"] == []  # no actuator in cluster-file mode
