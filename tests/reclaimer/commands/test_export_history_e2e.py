"""End to end: a real Prometheus backfilled with a day of a small cluster's history and the fake
API server holding that cluster -> `gpu-reclaimer export-history` (a subprocess) -> `simulate`
on the export, each job replaying its own measured utilization (`export_world`), and arriving
when kube-state-metrics says it was created, with the pod that never ran among them.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from e2e_world import cluster_objects, wall_now
from export_world import (
    ALL_PODS,
    BUSY_PODS,
    DEVICE_MIB,
    GIB,
    GONE_POD,
    IDLE_PODS,
    NEVER_RAN_POD,
    POD_GIB,
    STEP,
    WAIT_S,
    history,
)
from fakeapi import FakeCluster, served_kubeconfig
from promserver import PromServer, start_prometheus

from reclaimer.policy.settings import Policy
from reclaimer.prometheus.window_read import NO_POD_MEMORY
from reclaimer.simulate.jobs import Event, EventKind
from reclaimer.simulate.planning import planner_for
from reclaimer.simulate.replay import simulate
from reclaimer.simulate.settings import SimSettings
from reclaimer.simulate.sharing.usage import assign_usage
from reclaimer.simulate.strategies import Strategy
from reclaimer.simulate.trace import read_nodes, read_pods, read_profiles

pytestmark = [pytest.mark.prometheus, pytest.mark.slow]


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[PromServer, Path]]:
    """The backfilled Prometheus and a kubeconfig for the fake API server, on one `now`."""
    now = wall_now()
    cluster = FakeCluster()
    cluster.add(*cluster_objects(now))
    kubeconfig = tmp_path_factory.mktemp("kube") / "kubeconfig"
    with (
        start_prometheus(tmp_path_factory.mktemp("prom"), history=history(now)) as prom,
        served_kubeconfig(cluster, kubeconfig) as path,
    ):
        yield prom, path


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "reclaimer", *args],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )


@pytest.fixture(scope="module", params=["gpu-reclaim", "dcgm"])
def export(
    request: pytest.FixtureRequest,
    world: tuple[PromServer, Path],
    tmp_path_factory: pytest.TempPathFactory,
) -> tuple[Path, dict]:
    prom, kubeconfig = world
    out = tmp_path_factory.mktemp(f"export-{request.param}")
    done = _cli(
        "export-history",
        *("--prometheus-url", prom.url, "--kubeconfig", str(kubeconfig), "--since", "24h"),
        *("--metrics-source", request.param, "--out", str(out)),
    )
    assert done.returncode == 0, done.stderr
    return out, json.loads(done.stdout)


def test_export_lists_each_pod_with_its_queue_gpus_and_the_nodes(export):
    out, summary = export
    pods = pd.read_csv(out / "pods.csv").set_index("name")
    nodes = pd.read_csv(out / "nodes.csv")

    assert sorted(pods.index) == sorted((*ALL_PODS, NEVER_RAN_POD))
    assert pods.loc[GONE_POD, ["qos", "reclaimable", "num_gpu"]].tolist() == ["prod", False, 2]
    assert set(pods.loc[list(IDLE_PODS + BUSY_PODS), "qos"]) == {"research"}
    assert pods.loc[list(IDLE_PODS + BUSY_PODS), "reclaimable"].all()
    assert pods.loc[GONE_POD, "deletion_time"] - pods.loc[GONE_POD, "scheduled_time"] == (
        6 * 3600 + 2 * STEP  # 6 h of samples on the grid, both ends, plus the last step
    )
    assert dict(zip(nodes["sn"], nodes["gpu"], strict=True)) == {"gpu-node-1": 4, "gpu-node-2": 2}
    assert summary["queue_from"] == {"cluster": 4, "prometheus": 2}
    assert summary["pods"] == 6 and summary["prometheus_requests"] >= 8


def test_each_node_has_its_device_memory_and_each_pod_its_bytes_where_the_source_has_them(
    export,
):
    out, summary = export
    nodes = pd.read_csv(out / "nodes.csv")

    # the device series, with dcgm-exporter's pod labels on them, under either source
    assert dict(zip(nodes["sn"], nodes["gpu_memory_mib"], strict=True)) == DEVICE_MIB
    if summary["source"] == "dcgm":
        assert not (out / "memory.csv").exists() and summary["memory_samples"] is None
        assert NO_POD_MEMORY in summary["problems"]
        return
    memory = pd.read_csv(out / "memory.csv")
    assert summary["memory_samples"] == len(memory) == len(pd.read_csv(out / "utilization.csv"))
    held = memory.groupby("container_ip")["value"].agg(["min", "max"])
    assert (
        held["min"].to_dict()
        == held["max"].to_dict()
        == {pod: gib * GIB for pod, gib in POD_GIB.items()}
    )


def test_arrivals_come_from_kube_state_metrics_with_the_pod_that_never_ran(export):
    out, summary = export
    pods = pd.read_csv(out / "pods.csv").set_index("name")
    gone, never = pods.loc[GONE_POD], pods.loc[NEVER_RAN_POD]

    assert gone["scheduled_time"] - gone["creation_time"] == WAIT_S
    ran = pods.loc[[p for p in ALL_PODS if p != GONE_POD]]
    assert (ran["creation_time"] == ran["scheduled_time"]).all()  # created before the window
    assert pods["ran"].to_dict() == {p: p != NEVER_RAN_POD for p in pods.index}
    assert never[["qos", "reclaimable", "num_gpu"]].tolist() == ["prod", False, 2]
    assert never["creation_time"] == gone["scheduled_time"] + 3600
    # still pending: its wait is cut at the window's end; it needs llm-0's runtime (prod's median)
    assert never["scheduled_time"] >= pods["deletion_time"].drop(NEVER_RAN_POD).max() - STEP
    assert never["deletion_time"] - never["scheduled_time"] == (
        gone["deletion_time"] - gone["scheduled_time"]
    )
    assert summary["kube_state_metrics"] is True and not any(
        "kube-state-metrics" in p for p in summary["problems"]
    )
    assert (summary["arrivals_from_kube_pod_created"], summary["never_ran_pods"]) == (1, 1)


def _full_capacity(out: Path, strategy: str) -> dict:
    done = _cli(
        "simulate",
        *("--pods", str(out / "pods.csv"), "--nodes", str(out / "nodes.csv")),
        *("--utilization", str(out / "utilization.csv"), "--capacity-scale", "1"),
        *("--strategy", strategy, "--json", "--no-cold-start"),
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def test_at_full_capacity_the_never_run_pod_waits_and_reclaim_shortens_it(export):
    out, _ = export
    none, forecast = _full_capacity(out, "none"), _full_capacity(out, "forecast")

    # llm-1 asks for 2 GPUs while llm-0 holds gpu-node-2 and research fills gpu-node-1: it waits
    # until llm-0 ends, unless the two idle research pods are reclaimed for it
    assert none["guaranteed_wait_p95_s"] > 3600 and none["preemptions"] == 0
    assert forecast["guaranteed_wait_p95_s"] < none["guaranteed_wait_p95_s"] / 10
    assert forecast["preemptions"] >= 1 and forecast["wrongful_preemptions"] == 0


def test_the_replay_gives_each_job_the_profile_exported_for_it(export):
    out, _ = export
    jobs, profiles = read_pods(out / "pods.csv"), read_profiles(out / "utilization.csv")
    exported = pd.read_csv(out / "utilization.csv")
    usage = assign_usage(
        profiles, len(jobs.names), 0, 1800.0, 900.0, threshold=0.05, job_names=jobs.names
    )

    assert usage.own == len(ALL_PODS)
    for j, name in enumerate(jobs.names):
        mine = exported[exported["container_ip"] == name].sort_values("timestamp_anon")
        progress = (mine["timestamp_anon"].to_numpy() - mine["timestamp_anon"].min()).astype(float)
        replayed = usage.utilization(np.full(len(mine), j), progress)
        assert np.allclose(replayed, mine["value"].to_numpy() / 100.0), name
    busy = exported[exported["container_ip"].isin(BUSY_PODS)]["value"]
    assert busy.min() >= 60.0 - 1e-6 and busy.max() <= 90.0 + 1e-6


def test_simulate_on_the_export_reclaims_only_the_idle_jobs(export):
    out, _ = export
    files = ("--pods", str(out / "pods.csv"), "--nodes", str(out / "nodes.csv"))
    # half the nodes: gpu-node-1 alone, so prod/llm-0 (2 GPUs) waits behind research's 4 pods
    done = _cli(
        "simulate",
        *files,
        *("--utilization", str(out / "utilization.csv"), "--capacity-scale", "0.5"),
        *("--strategy", "forecast", "--json", "--no-cold-start"),
    )
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    assert result["own_utilization_jobs"] == len(ALL_PODS)
    assert result["preemptions"] >= 1
    assert result["wrongful_preemptions"] == 0 and result["guaranteed_preemptions"] == 0

    jobs = read_pods(out / "pods.csv")
    victims: set[str] = set()

    def note(event: Event) -> None:
        if event.kind is EventKind.PREEMPTED:
            victims.add(jobs.names[event.job])

    simulate(
        jobs,
        read_nodes(out / "nodes.csv", 0.5),
        read_profiles(out / "utilization.csv"),
        SimSettings(strategy=Strategy.FORECAST),
        planner=planner_for(Policy()),
        on_event=note,
    )
    assert victims and victims <= set(IDLE_PODS)
