"""`gpu-reclaimer export-history`: every refusal is a message and an exit code, never a
traceback; bad flags exit 2 before Prometheus is contacted, an unreadable source exits 1.
A Prometheus without kube-state-metrics still exports, arrivals equal to starts, and says so."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest
import yaml
from e2e_world import cluster_objects, wall_now
from promserver import free_port, openmetrics, start_prometheus

import gpu_contract as gc
from reclaimer.cli import build_parser, main

PROG = "gpu-reclaimer export-history:"


@pytest.fixture
def dump(tmp_path: Path) -> Path:
    path = tmp_path / "cluster.yaml"
    path.write_text(yaml.safe_dump_all(cluster_objects(wall_now())), encoding="utf-8")
    return path


def _export(url: str, dump: Path, out: Path, *extra: str) -> list[str]:
    return [
        "export-history",
        "--prometheus-url",
        url,
        "--cluster-file",
        str(dump),
        "--out",
        str(out),
        *extra,
    ]


def _refused(capsys: pytest.CaptureFixture[str], code: int, args: list[str]) -> str:
    assert main(args) == code
    err = capsys.readouterr().err
    assert err.startswith(PROG) and "Traceback" not in err
    return err


NOBODY = "http://127.0.0.1:9"  # nothing listens there; the usage errors never get that far
USAGE = [
    ("bad-since", ["--since", "7 days"], "expected a duration"),
    ("since-below-step", ["--since", "30s", "--step", "1m"], "--since >= --step"),
    ("zero-step", ["--step", "0s"], "--step must be > 0"),
    ("unreadable-token", ["--prometheus.bearer-token-file", "/no/such/token"], "/no/such/token"),
]


@pytest.mark.parametrize(("extra", "message"), [u[1:] for u in USAGE], ids=[u[0] for u in USAGE])
def test_bad_flags_exit_2_with_the_reason(capsys, tmp_path, dump, extra, message):
    err = _refused(capsys, 2, _export(NOBODY, dump, tmp_path / "out", *extra))

    assert message in err
    assert not (tmp_path / "out" / "pods.csv").exists()


def test_an_unwritable_out_exits_2_before_reading(capsys, tmp_path, dump):
    a_file = tmp_path / "a-file"
    a_file.write_text("", encoding="utf-8")  # a directory cannot be made under it, even by root

    err = _refused(capsys, 2, _export(NOBODY, dump, a_file / "out"))

    assert "not a writable directory" in err


def test_an_unreadable_dump_exits_2(capsys, tmp_path):
    err = _refused(capsys, 2, _export(NOBODY, tmp_path / "missing.yaml", tmp_path / "out"))

    assert "--cluster-file" in err and "missing.yaml" in err


def test_prometheus_down_exits_1(capsys, tmp_path, dump):
    url = f"http://127.0.0.1:{free_port()}"

    err = _refused(capsys, 1, _export(url, dump, tmp_path / "out"))

    assert "cannot read history from Prometheus" in err and "unreachable" in err


@pytest.mark.prometheus
@pytest.mark.parametrize("source", ["gpu-reclaim", "dcgm"])
def test_a_prometheus_without_the_series_exits_1_and_says_which(capsys, tmp_path, dump, source):
    (tmp_path / "prom").mkdir()
    with start_prometheus(tmp_path / "prom") as prom:
        err = _refused(
            capsys, 1, _export(prom.url, dump, tmp_path / "out", "--metrics-source", source)
        )

    assert "no per-pod GPU series" in err
    assert ("DCGM_FI_DEV_GPU_UTIL" in err) == (source == "dcgm")


@pytest.mark.prometheus
def test_without_kube_state_metrics_arrivals_are_the_starts_and_the_summary_says_so(
    capsys, tmp_path, dump
):
    now = wall_now()
    times = [now - 3600 + 60 * i for i in range(30)]
    pod = {"namespace": "a", "pod": "p", "container": "w", "gpu": "0", "UUID": "GPU-0"}
    own = pod | {"Hostname": "gpu-node-1"}
    history = openmetrics(
        [
            (gc.POD_UTILIZATION, own, [(t, 0.5) for t in times]),
            (gc.POD_ALLOCATED, own, [(t, 1.0) for t in times]),
        ]
    )
    (tmp_path / "prom").mkdir()
    with start_prometheus(tmp_path / "prom", history=history) as prom:
        assert main(_export(prom.url, dump, tmp_path / "out", "--since", "2h")) == 0
    summary = json.loads(capsys.readouterr().out)
    pods = pd.read_csv(tmp_path / "out" / "pods.csv")

    assert summary["kube_state_metrics"] is False
    assert any(p.startswith("kube-state-metrics not found") for p in summary["problems"])
    assert (summary["arrivals_from_kube_pod_created"], summary["never_ran_pods"]) == (0, 0)
    assert pods["name"].tolist() == ["a/p"]
    assert (pods["creation_time"] == pods["scheduled_time"]).all()


def _prometheus_flags(command: str) -> set[str]:
    parser = build_parser([command])
    sub = next(a for a in parser._actions if a.dest == "command")
    return {
        flag
        for action in sub.choices[command]._actions
        for flag in action.option_strings
        if flag.startswith("--prometheus")
    }


def test_export_history_takes_exactly_runs_prometheus_flags():
    assert _prometheus_flags("export-history") == _prometheus_flags("run")
    assert "--prometheus.bearer-token-file" in _prometheus_flags("run")
