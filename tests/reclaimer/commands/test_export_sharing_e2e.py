"""End to end, what sharing costs on the user's own cluster: a real Prometheus backfilled with four
hours of two time-sliced GPUs (`export_sharing_world`) -> `gpu-reclaimer export-history` (a
subprocess) -> `simulate` on the export with its memory. The export counts the physical GPUs,
writes each pod's bytes and each node's device memory; the replay OOM-kills exactly the pod
that overflowed its device, when it did, and nobody where the pods fit."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pandas as pd
import pytest
import yaml
from e2e_world import wall_now
from export_sharing_world import (
    BASE_GIB,
    BIG_MIB,
    BIG_POD,
    DEVICE_MIB,
    GIB,
    OVER_AT_S,
    OVER_GIB,
    STEP,
    cluster_objects,
    gib_at,
    history,
)
from promserver import start_prometheus

from reclaimer.policy.settings import Policy
from reclaimer.prometheus.arrivals import NO_KUBE_STATE
from reclaimer.simulate.jobs import Event, EventKind
from reclaimer.simulate.planning import planner_for
from reclaimer.simulate.replay import simulate
from reclaimer.simulate.settings import SimSettings
from reclaimer.simulate.sharing.memory import read_memory
from reclaimer.simulate.strategies import Strategy
from reclaimer.simulate.trace import read_nodes, read_pods, read_profiles

pytestmark = [pytest.mark.prometheus, pytest.mark.slow]
SHARING = ("--strategy", "timeslice", "--replicas", "2", "--pool-share", "1")


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "reclaimer", *args],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )


@pytest.fixture(scope="module")
def export(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, dict]]:
    now = wall_now()
    dump = tmp_path_factory.mktemp("cluster") / "cluster.yaml"
    dump.write_text(yaml.safe_dump_all(cluster_objects()), encoding="utf-8")
    out = tmp_path_factory.mktemp("export")
    with start_prometheus(tmp_path_factory.mktemp("prom"), history=history(now)) as prom:
        done = _cli(
            "export-history",
            *("--prometheus-url", prom.url, "--cluster-file", str(dump), "--since", "6h"),
            *("--out", str(out)),
        )
    assert done.returncode == 0, done.stderr
    yield out, json.loads(done.stdout)


def test_time_sliced_nodes_count_their_physical_gpus_and_their_device_memory(export):
    out, summary = export
    nodes = pd.read_csv(out / "nodes.csv").set_index("sn")
    pods = pd.read_csv(out / "pods.csv").set_index("name")

    assert nodes["gpu"].to_dict() == {"ts-node-1": 1, "ts-node-2": 1, "big-node": 2}
    assert nodes["gpu_memory_mib"].to_dict() == {
        "ts-node-1": DEVICE_MIB,
        "ts-node-2": DEVICE_MIB,
        "big-node": BIG_MIB,
    }
    assert summary["timesliced_nodes"] == {"ts-node-1": 2, "ts-node-2": 2}
    assert summary["nodes_with_device_memory"] == 3
    assert summary["problems"] == [NO_KUBE_STATE]  # nothing about the nodes or the memory
    assert pods["gpu_milli"].to_dict() == {
        "serve/a": 500,
        "serve/b": 500,
        "serve/c": 500,
        "serve/d": 500,
        BIG_POD: 1000,
    }
    assert pods.loc[BIG_POD, "num_gpu"] == 2


def test_each_pods_bytes_are_written_on_its_utilization_grid(export):
    out, summary = export
    memory = pd.read_csv(out / "memory.csv")
    util = pd.read_csv(out / "utilization.csv")

    keys = ["container_ip", "timestamp_anon"]
    assert sorted(map(tuple, memory[keys].to_numpy())) == sorted(map(tuple, util[keys].to_numpy()))
    assert summary["memory_samples"] == len(memory) == len(util)
    b = memory[memory["container_ip"] == "serve/b"].sort_values("timestamp_anon")
    first = b["timestamp_anon"].min()
    # each grid point holds the most of the world's samples in the step before it, both ends
    # included (Prometheus 2's range selectors): a sample on a step's edge counts in two steps
    expected = [
        max(gib_at("serve/b", s - first) for s in (t - STEP, t) if s >= first) * GIB
        for t in b["timestamp_anon"]
    ]
    assert b["value"].tolist() == expected
    assert b["value"].max() == OVER_GIB * GIB and b["value"].min() == BASE_GIB * GIB


def test_simulate_replays_the_bytes_as_measured_and_kills_only_the_overflow(export):
    out, _ = export
    files = ("--pods", str(out / "pods.csv"), "--nodes", str(out / "nodes.csv"))
    done = _cli(
        "simulate",
        *files,
        *("--utilization", str(out / "utilization.csv"), "--memory", str(out / "memory.csv")),
        *("--capacity-scale", "1", *SHARING, "--no-cold-start", "--json"),
    )
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)

    assert result["memory_replay"] == "as measured"
    assert result["timesliced_gpus"] == 2  # the two physical GPUs, at 2 replicas
    assert result["oom_kills"] == result["guaranteed_oom_kills"] == 1


def test_the_kill_is_serve_b_when_its_memory_grew(export):
    out, _ = export
    jobs, profiles = read_pods(out / "pods.csv"), read_profiles(out / "utilization.csv")
    nodes = read_nodes(out / "nodes.csv")
    events: list[Event] = []
    simulate(
        jobs,
        nodes,
        profiles,
        SimSettings(Strategy.TIMESLICE, pool_share=1.0),
        planner=planner_for(Policy()),
        memory=read_memory(out / "memory.csv", profiles, None),
        on_event=events.append,
    )

    started: dict[str, float] = {}
    for e in events:
        if e.kind is EventKind.STARTED:
            started.setdefault(jobs.names[e.job], e.at)
    # all from the start: the four serve pods fill the pool's 2 GPUs x 2 replicas, so d shares
    # with a BASE_GIB pod when it grows, filling its device exactly, and is not killed
    assert len(started) == 5 and len(set(started.values())) == 1
    kills = [e for e in events if e.kind is EventKind.OOM_KILLED]
    assert [jobs.names[e.job] for e in kills] == ["serve/b"]
    # at full speed (30% each), progress is time: the kill lands in the share step (5 minutes,
    # read sample by sample) that holds b's first sample over the device, 3 h into its run
    kill = kills[0]
    assert kill.at - started["serve/b"] == kill.progress
    share = SimSettings(Strategy.TIMESLICE).share_step_seconds
    assert kill.progress <= OVER_AT_S < kill.progress + share
