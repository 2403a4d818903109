"""Safety end to end: each cycle is its own `gpu-reclaimer run --once` process (as after a
restart), speaking through the real `kubernetes` client to the stateful fake API server, with a
real Prometheus holding the history. What one cycle did is known to the next only through the
cluster.

- Room in flight: cycle 1 suspends the idle job for the waiting one; its pod keeps its GPUs (no
  operator deletes it here, as when a checkpointing job takes minutes to stop). Cycle 2 must not
  free a second job for the same pending job, even though a busy job is fair game by then.
- A release still in flight after `releaseTimeout` is a warning, an Event and a metric, and
  still never doubled.
- Unknown is not idle: an idle-looking job whose GPU stopped yielding utilization is left alone
  (our exporter's series and dcgm-exporter's alike).
- A PodDisruptionBudget over a job's pods blocks stopping the whole job.
- `--once --apply --leader-elect` takes the Lease first, or exits 2.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
import urllib.request
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from fakeapi import FakeCluster
from promserver import PromServer, free_port, start_prometheus
from repo_paths import REPO
from runonce import once_in_process
from safety_world import (
    BUSY,
    IDLE,
    PENDING,
    POLICY,
    cluster_objects,
    dcgm_history,
    history,
    pdb,
    ts,
)

PYT = ("kubeflow.org", "v1", "pytorchjobs")
pytestmark = [pytest.mark.prometheus, pytest.mark.slow]
# the world the conftest's fixtures build (prom: history(now); cluster: cluster_objects(now))
world_history = history
world_objects = cluster_objects


@pytest.fixture
def policy(tmp_path: Path) -> Path:
    path = tmp_path / "policy.yaml"
    path.write_text(POLICY)
    return path


def cycle(prom_url: str, kubeconfig: Path, *extra: str) -> tuple[int, dict[str, Any], str]:
    """One `run --once --json` in a process of its own: (exit code, report, stderr)."""
    return once_in_process(prom_url, kubeconfig, *extra)


def preempted(report: dict[str, Any]) -> list[str]:
    return [a["target"] for a in report["plan"]["actions"] if a["kind"] == "preempt"]


def skips(report: dict[str, Any]) -> dict[str, str]:
    return {s["target"]: s["reason"] for s in report["plan"]["skipped"]}


def notes(cluster: FakeCluster, name: str) -> dict[str, str]:
    obj = cluster.get(*PYT, name, "research")
    assert obj is not None
    return dict(obj["metadata"].get("annotations") or {})


def test_room_in_flight_is_not_freed_again_by_the_next_process(
    prom: PromServer, kubeconfig: Path, cluster: FakeCluster, policy: Path
) -> None:
    code, first, err = cycle(prom.url, kubeconfig, "--apply", "--policy-file", str(policy))
    assert code == 0, err
    assert preempted(first) == [IDLE]
    assert notes(cluster, "notebook")["gpu-reclaim.io/room-for"] == PENDING
    assert cluster.get(*PYT, "notebook", "research")["spec"]["runPolicy"]["suspend"] is True
    # its pod still holds 2 GPUs: nothing deletes it in the fake cluster
    assert cluster.get("", "v1", "pods", "notebook-master-0", "research") is not None

    code, second, err = cycle(prom.url, kubeconfig, "--apply", "--policy-file", str(policy))
    assert code == 0, err
    assert preempted(second) == []
    assert skips(second)[PENDING] == "RoomInFlight"
    assert skips(second)[BUSY] == "NotForecastIdle"
    assert "suspend" not in cluster.get(*PYT, "train", "research")["spec"].get("runPolicy", {})
    assert second["plan"]["warnings"] == []


def test_an_overdue_release_is_reported_once_and_still_not_doubled(
    prom: PromServer, kubeconfig: Path, cluster: FakeCluster, policy: Path, tmp_path: Path
) -> None:
    code, _, err = cycle(prom.url, kubeconfig, "--apply", "--policy-file", str(policy))
    assert code == 0, err
    job = cluster.get(*PYT, "notebook", "research")
    job["metadata"]["annotations"]["gpu-reclaim.io/suspended-at"] = ts(time.time() - 1500)
    port = free_port()
    argv = [sys.executable, "-m", "reclaimer", "run", "--apply", "--policy-file", str(policy)]
    argv += ["--prometheus-url", prom.url, "--kubeconfig", str(kubeconfig), "--interval", "1s"]
    argv += [f"--web.listen-address=127.0.0.1:{port}"]
    log = (tmp_path / "loop.log").open("wb")
    proc = subprocess.Popen(argv, cwd=REPO, stdout=log, stderr=subprocess.STDOUT)
    try:
        url = f"http://127.0.0.1:{port}/metrics"
        metrics = _wait_for(url, lambda body: _sample(body, "gpu_reclaimer_releases_overdue") == 1)
        assert _sample(metrics, "gpu_reclaimer_gpus_releasing") == 2
        success = 'gpu_reclaimer_cycles_total{result="success"}'
        _wait_for(url, lambda body: (_sample(body, success) or 0) >= 3)  # cycles, one Event
        report = json.loads(_get(f"http://127.0.0.1:{port}/plan"))
    finally:
        proc.terminate()
        proc.wait(timeout=30)
        log.close()
    (warning,) = report["plan"]["warnings"]
    assert (warning["target"], warning["reason"]) == (IDLE, "ReleaseOverdue")
    assert "releaseTimeout 10m" in warning["detail"]
    assert preempted(report) == [] and skips(report)[PENDING] == "RoomInFlight"
    events = [
        e
        for e in cluster.all("", "v1", "events")
        if e["reason"] == "GpuReclaimReleaseOverdue" and e["involvedObject"]["name"] == "notebook"
    ]
    assert len(events) == 1 and events[0]["type"] == "Warning"  # once, over several cycles


GIVE_UP_S = 300.0  # only a hung controller takes this long, even on a busy machine


def _get(url: str) -> str:
    with urllib.request.urlopen(url, timeout=GIVE_UP_S) as r:
        return r.read().decode()


def _sample(metrics: str, sample: str) -> float | None:
    """The value of one exposition line's sample (`name{labels}`), None when absent."""
    for line in metrics.splitlines():
        name, _, value = line.rpartition(" ")
        if name == sample:
            return float(value)
    return None


def _wait_for(url: str, ok: Callable[[str], bool]) -> str:
    """The body at `url` once `ok` holds for it (polled: cycles run at their own pace)."""
    deadline = time.monotonic() + GIVE_UP_S
    while True:
        try:
            body = _get(url)
        except OSError:  # not listening yet
            body = ""
        if ok(body):
            return body
        assert time.monotonic() < deadline, f"gave up waiting at {url}:\n{body[-2000:]}"
        time.sleep(0.3)


@pytest.mark.parametrize(
    ("selector", "min_available"),
    [
        ({"matchLabels": {"app": "notebook"}}, 1),
        ({"matchExpressions": [{"key": "app", "operator": "In", "values": ["notebook"]}]}, 1),
        ({}, "100%"),
    ],
    ids=["match-labels", "match-expressions", "empty-selector-whole-namespace"],
)
def test_a_disruption_budget_blocks_stopping_the_job(
    prom: PromServer,
    kubeconfig: Path,
    cluster: FakeCluster,
    selector: dict[str, Any],
    min_available: int | str,
) -> None:
    cluster.add(pdb("keep-notebook", selector, min_available))
    code, report, err = cycle(prom.url, kubeconfig, "--apply")
    assert code == 0, err
    assert preempted(report) == []
    assert skips(report)[IDLE] == "DisruptionBudget"
    detail = next(s["detail"] for s in report["plan"]["skipped"] if s["target"] == IDLE)
    assert detail.startswith("PodDisruptionBudget research/keep-notebook allows 0")
    assert [w for w in cluster.writes() if "/leases" not in w.path] == []


@pytest.fixture(scope="module")
def unreadable_prom(tmp_path_factory: pytest.TempPathFactory, now: float) -> Iterator[PromServer]:
    text = history(now, unreadable_idle_for=600.0)
    work = tmp_path_factory.mktemp("prom-gap")
    with start_prometheus(work, history=text, carry_on=True) as server:  # the gap goes on
        yield server


@pytest.fixture(scope="module")
def dcgm_prom(tmp_path_factory: pytest.TempPathFactory, now: float) -> Iterator[PromServer]:
    text = dcgm_history(now, unreadable_idle_for=600.0)
    work = tmp_path_factory.mktemp("prom-dcgm")
    with start_prometheus(work, history=text, carry_on=True) as server:  # the gap goes on
        yield server


@pytest.mark.parametrize("source", ["gpu-reclaim", "dcgm"])
def test_a_gpu_that_cannot_be_read_is_not_idle(
    unreadable_prom: PromServer, dcgm_prom: PromServer, kubeconfig: Path, source: str
) -> None:
    server = unreadable_prom if source == "gpu-reclaim" else dcgm_prom
    code, report, err = cycle(server.url, kubeconfig, "--apply", "--metrics-source", source)
    assert code == 0, err
    assert preempted(report) == []
    assert skips(report)[IDLE] == "UsageUnknown"
    detail = next(s["detail"] for s in report["plan"]["skipped"] if s["target"] == IDLE)
    assert "research/notebook-master-0" in detail


def test_once_with_leader_election_takes_the_lease_or_exits_2(
    prom: PromServer, kubeconfig: Path, cluster: FakeCluster
) -> None:
    held = {
        "apiVersion": "coordination.k8s.io/v1",
        "kind": "Lease",
        "metadata": {"name": "gpu-reclaimer", "namespace": "gpu-reclaim"},
        "spec": {
            "holderIdentity": "other-replica",
            "leaseDurationSeconds": 3600,
            "renewTime": ts(time.time()).replace("Z", ".000000Z"),
        },
    }
    cluster.add(held)
    code, report, err = cycle(prom.url, kubeconfig, "--apply", "--leader-elect")
    assert code == 2 and report == {}
    assert "not the leader (Lease gpu-reclaim/gpu-reclaimer is held by other-replica)" in err
    assert [w for w in cluster.writes()] == []

    cluster.objects[("coordination.k8s.io", "v1", "leases")].clear()
    code, report, err = cycle(prom.url, kubeconfig, "--apply", "--leader-elect")
    assert code == 0, err
    assert preempted(report) == [IDLE]
    assert [o["outcome"] for o in report["outcomes"]] == ["applied"]
    (lease,) = cluster.all("coordination.k8s.io", "v1", "leases")
    assert lease["spec"].get("holderIdentity") is None  # released on the way out


def test_a_bad_policy_exits_2_before_anything_is_contacted(
    kubeconfig: Path, cluster: FakeCluster, tmp_path: Path
) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text(
        "threshold: 5%\nhorizon: 1e308\nthreshold: 100%\nqueueShares: {a: 0.8, b: 0.5}\n"
    )
    listener = __import__("socket").socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen()
    listener.setblocking(False)
    try:
        url = f"http://127.0.0.1:{listener.getsockname()[1]}"
        code, _, err = cycle(url, kubeconfig, "--apply", "--policy-file", str(bad))
        with pytest.raises(BlockingIOError):
            listener.accept()  # Prometheus was never called
    finally:
        listener.close()
    assert code == 2
    for path in ("threshold: duplicate key", "horizon: must be at most 7d", "queueShares:"):
        assert path in err
    assert cluster.requests == []


def test_a_job_kueue_admits_is_left_to_kueue(
    prom: PromServer, kubeconfig: Path, cluster: FakeCluster
) -> None:
    job = cluster.get(*PYT, "notebook", "research")
    job["metadata"]["labels"] = {"kueue.x-k8s.io/queue-name": "research-lq"}
    code, report, err = cycle(prom.url, kubeconfig, "--apply")
    assert code == 0, err
    assert preempted(report) == []
    assert skips(report)[IDLE] == "ManagedByAnotherController"


def test_a_job_whose_podgroup_names_a_protected_queue_is_not_stopped(
    prom: PromServer, kubeconfig: Path, cluster: FakeCluster
) -> None:
    """No `schedulingPolicy.queue`: the training-operator keeps the queue its PodGroup names,
    here the protected `prod`, and Volcano schedules the job by it, not by "default"."""
    cluster.add(
        {
            "apiVersion": "scheduling.volcano.sh/v1beta1",
            "kind": "Queue",
            "metadata": {"name": "default"},
            "spec": {"weight": 1, "reclaimable": True},
            "status": {"state": "Open"},
        }
    )
    job = cluster.get(*PYT, "notebook", "research")
    del job["spec"]["runPolicy"]["schedulingPolicy"]["queue"]
    group = cluster.get("scheduling.volcano.sh", "v1beta1", "podgroups", "notebook", "research")
    group["spec"]["queue"] = "prod"
    code, report, err = cycle(prom.url, kubeconfig, "--apply")
    assert code == 0, err
    assert IDLE not in preempted(report)
    assert skips(report)[IDLE] == "QueueNotReclaimable"  # judged by its PodGroup's queue
    assert "suspend" not in cluster.get(*PYT, "notebook", "research")["spec"]["runPolicy"]
