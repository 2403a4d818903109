"""Stops cut short, end to end: each cycle a `gpu-reclaimer run` process of its own, the real
`kubernetes` client against the stateful fake API server, a real Prometheus holding the history.
A controller is killed (SIGKILL, from the fake server, at exactly the request named) and the next
process has only the cluster to go by.

- Killed between the Volcano Job's stop record and its AbortJob Command: the next process either
  stops that job again (the stop is finished) or clears the record (nothing needs the room any
  more), and never takes a second victim for the same pending job.
- A Command create answered 504 (or a client timeout) after the Command was stored: read back, the
  stop happened; the record stays, and the next process counts the room as in flight.
- The same for a bare pod, killed between its eviction record and the eviction itself.
- A resume killed before its ResumeJob Command leaves the record, so the next process resumes
  the job: never an aborted job without the record that says the reclaimer must resume it.
- Killed after a PyTorchJob's stop but before its Event: the next process writes the Event, once.
- The reclaimed-GPUs counter counts a stop only once it took effect and the pods let go: not
  while Volcano has yet to take the Command up, nor while the aborted job's pods terminate.

Volcano's job controller runs only when a test says so (`fakeapi.volcano`, in Volcano's own
order, under the fake's lock): until then a Command stays.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path
from typing import Any

import e2e_world as vc
import numpy as np
import pytest
import safety_world as pt
from fakeapi import NEVER_S, FakeCluster, served_kubeconfig
from fakeapi import volcano as volcano_controller
from promserver import PromServer, free_port, openmetrics, start_prometheus
from repo_paths import REPO

import gpu_contract as gc
from reclaimer.kube.objects import resources as r

pytestmark = [pytest.mark.prometheus, pytest.mark.slow]

VCJ = ("batch.volcano.sh", "v1alpha1", "jobs")
CMD = ("bus.volcano.sh", "v1alpha1", "commands")
PYT = ("kubeflow.org", "v1", "pytorchjobs")
PODS = ("", "v1", "pods")
PODGROUPS = ("scheduling.volcano.sh", "v1beta1", "podgroups")
BUSY_AFTER = "reclaimBusyAfter: 10m\n"  # the busy job is fair game: a second victim is at hand


@pytest.fixture(scope="module")
def vc_prom(tmp_path_factory: pytest.TempPathFactory, now: float) -> Iterator[PromServer]:
    work = tmp_path_factory.mktemp("prom-vc")
    with start_prometheus(work, history=vc.history(now), carry_on=True) as s:
        yield s


@pytest.fixture(scope="module")
def pt_prom(tmp_path_factory: pytest.TempPathFactory, now: float) -> Iterator[PromServer]:
    work = tmp_path_factory.mktemp("prom-pt")
    with start_prometheus(work, history=pt.history(now), carry_on=True) as s:
        yield s


@pytest.fixture
def policy(tmp_path: Path) -> Path:
    path = tmp_path / "policy.yaml"
    path.write_text(BUSY_AFTER)
    return path


def _served(cluster: FakeCluster, tmp_path: Path) -> Iterator[tuple[FakeCluster, Path]]:
    with served_kubeconfig(cluster, tmp_path / "kubeconfig") as path:
        yield cluster, path


@pytest.fixture
def volcano(now: float, tmp_path: Path) -> Iterator[tuple[FakeCluster, Path]]:
    c = FakeCluster()
    c.add(*vc.cluster_objects(now))
    yield from _served(c, tmp_path)


@pytest.fixture
def pytorch(now: float, tmp_path: Path) -> Iterator[tuple[FakeCluster, Path]]:
    c = FakeCluster()
    c.add(*pt.cluster_objects(now))
    yield from _served(c, tmp_path)


def _bare_history(now: float) -> str:
    """24 h of the Volcano world's busy job, and of `research/scratch`, an idle bare pod."""
    times = np.arange(now - vc.HISTORY_S, now - 15.0, 60.0)
    series = []
    for pod, level, gpu in (("train-w-0", 0.8, 0), ("train-w-1", 0.8, 1), ("scratch", 0.0, 2)):
        lab = {"namespace": "research", "pod": pod, "container": "w", "gpu": str(gpu)}
        lab |= {"Hostname": "gpu-node-1", "UUID": f"GPU-{pod}"}
        series.append((gc.POD_UTILIZATION, lab, [(float(t), level) for t in times]))
        series.append((gc.POD_ALLOCATED, lab, [(float(t), 1.0) for t in times]))
    return openmetrics(series)


def _scratch_pod(now: float) -> dict[str, Any]:
    """A bare 2-GPU pod of the research queue where the idle Volcano Job was."""
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": "scratch",
            "namespace": "research",
            "uid": "44444444-0000-0000-0000-000000000001",
            "labels": {"volcano.sh/queue-name": "research"},
            "creationTimestamp": vc._ts(now - vc.HISTORY_S - 3600),
        },
        "spec": {
            "nodeName": "gpu-node-1",
            "containers": [
                {"name": "w", "image": "w:1", "resources": {"limits": {"nvidia.com/gpu": "2"}}}
            ],
        },
        "status": {"phase": "Running", "startTime": vc._ts(now - vc.HISTORY_S - 3000)},
    }


@pytest.fixture(scope="module")
def bare_prom(tmp_path_factory: pytest.TempPathFactory, now: float) -> Iterator[PromServer]:
    work = tmp_path_factory.mktemp("prom-bare")
    with start_prometheus(work, history=_bare_history(now), carry_on=True) as s:
        yield s


@pytest.fixture
def bare(now: float, tmp_path: Path) -> Iterator[tuple[FakeCluster, Path]]:
    c = FakeCluster()
    keep = [o for o in vc.cluster_objects(now) if "sim-sweep" not in o["metadata"]["name"]]
    c.add(*keep, _scratch_pod(now))
    yield from _served(c, tmp_path)


def argv(prom: PromServer, kubeconfig: Path, *extra: str) -> list[str]:
    base = [sys.executable, "-m", "reclaimer", "run", "--prometheus-url", prom.url]
    return [*base, "--kubeconfig", str(kubeconfig), "--apply", *extra]


GIVE_UP_S = 300  # only a controller that hangs takes this long, even on a busy machine


def cycle(prom: PromServer, kubeconfig: Path, *extra: str) -> dict[str, Any]:
    """One `run --once --json --apply` process; its report."""
    cmd = argv(prom, kubeconfig, "--once", "--json", *extra)
    done = subprocess.run(
        cmd, cwd=REPO, capture_output=True, text=True, timeout=GIVE_UP_S, check=False
    )
    assert done.returncode == 0, done.stderr
    report: dict[str, Any] = json.loads(done.stdout)
    return report


def killed_at(
    cluster: FakeCluster, prom: PromServer, kubeconfig: Path, method: str, path: str, *extra: str
) -> None:
    """One `run --once --apply` process, SIGKILLed by the server when it sends `method path`
    (the request is not carried out)."""
    cmd = argv(prom, kubeconfig, "--once", "--json", *extra)
    proc = subprocess.Popen(cmd, cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE)

    def kill() -> None:
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(timeout=GIVE_UP_S)

    cluster.inject(method, path, 503, before=kill)
    try:
        _out, err = proc.communicate(timeout=GIVE_UP_S)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == -signal.SIGKILL, (proc.returncode, err.decode()[-2000:])


def preempted(report: dict[str, Any]) -> list[str]:
    return [a["target"] for a in report["plan"]["actions"] if a["kind"] == "preempt"]


def skips(report: dict[str, Any]) -> dict[str, str]:
    return {s["target"]: s["reason"] for s in report["plan"]["skipped"]}


def notes(cluster: FakeCluster, res: tuple[str, str, str], name: str) -> dict[str, str]:
    obj = cluster.get(*res, name, "research")
    assert obj is not None
    return dict(obj["metadata"].get("annotations") or {})


def events(cluster: FakeCluster, name: str, reason: str) -> list[dict[str, Any]]:
    return [
        e
        for e in cluster.all("", "v1", "events")
        if e["involvedObject"]["name"] == name and e["reason"] == reason
    ]


def test_a_stop_killed_before_its_command_is_finished_not_doubled(
    vc_prom: PromServer, volcano: tuple[FakeCluster, Path], policy: Path
) -> None:
    cluster, kubeconfig = volcano
    killed_at(cluster, vc_prom, kubeconfig, "POST", "/commands$", "--policy-file", str(policy))
    assert notes(cluster, VCJ, "sim-sweep")[r.ROOM_FOR] == vc.PENDING_JOB  # the record only
    assert cluster.all(*CMD) == []

    report = cycle(vc_prom, kubeconfig, "--policy-file", str(policy))
    assert preempted(report) == [vc.IDLE_JOB]  # the same job, stopped for real this time
    assert [o["outcome"] for o in report["outcomes"]] == ["applied"]
    (cmd,) = cluster.all(*CMD)
    assert (cmd["action"], cmd["target"]["name"]) == ("AbortJob", "sim-sweep")
    assert r.SUSPENDED_BY not in notes(cluster, VCJ, "train")  # no second victim

    again = cycle(vc_prom, kubeconfig, "--policy-file", str(policy))
    assert preempted(again) == [] and skips(again)[vc.PENDING_JOB] == "RoomInFlight"
    assert len(cluster.all(*CMD)) == 1


def test_a_stop_killed_before_its_command_is_cleared_when_no_longer_wanted(
    vc_prom: PromServer, volcano: tuple[FakeCluster, Path], policy: Path
) -> None:
    cluster, kubeconfig = volcano
    killed_at(cluster, vc_prom, kubeconfig, "POST", "/commands$", "--policy-file", str(policy))
    assert r.SUSPENDED_BY in notes(cluster, VCJ, "sim-sweep")
    del cluster.objects[PODGROUPS][("prod", "llm")]  # the pending job went away meanwhile

    report = cycle(vc_prom, kubeconfig, "--policy-file", str(policy))
    assert report["plan"]["actions"] == []
    left = notes(cluster, VCJ, "sim-sweep")
    assert not [k for k in left if k != r.RESUMED_AT and k.startswith(r.PREFIX)], left
    (event,) = events(cluster, "sim-sweep", "GpuReclaimStopCleared")
    assert event["type"] == "Warning" and "no AbortJob Command" in event["message"]
    assert cluster.all(*CMD) == [] and r.SUSPENDED_BY not in notes(cluster, VCJ, "train")


def test_an_eviction_killed_after_its_record_is_finished_not_doubled(
    bare_prom: PromServer, bare: tuple[FakeCluster, Path], policy: Path
) -> None:
    cluster, kubeconfig = bare
    evict = "/pods/scratch/eviction$"
    cluster.inject("POST", evict, None)  # the dry-run probe goes through
    killed_at(cluster, bare_prom, kubeconfig, "POST", evict, "--policy-file", str(policy))
    assert notes(cluster, PODS, "scratch")[r.ROOM_FOR] == vc.PENDING_JOB  # the record only

    report = cycle(bare_prom, kubeconfig, "--policy-file", str(policy))
    assert preempted(report) == ["research/scratch"]  # the same pod, evicted this time
    assert [o["outcome"] for o in report["outcomes"]] == ["applied"]
    evicted = cluster.get(*PODS, "scratch", "research")  # Terminating for its grace period
    assert evicted is not None and evicted["metadata"]["deletionTimestamp"]
    assert cluster.finish_termination("research", "scratch") == 1
    assert r.SUSPENDED_BY not in notes(cluster, VCJ, "train") and cluster.all(*CMD) == []


def test_a_resume_killed_before_its_command_keeps_the_record_and_is_resumed_next(
    vc_prom: PromServer, volcano: tuple[FakeCluster, Path], policy: Path, now: float
) -> None:
    cluster, kubeconfig = volcano
    job = cluster.get(*VCJ, "sim-sweep", "research")
    job["status"]["state"]["phase"] = "Aborted"  # aborted by the reclaimer two hours ago
    job["metadata"]["annotations"] = {
        r.SUSPENDED_BY: "gpu-reclaimer",
        r.SUSPENDED_AT: vc._ts(now - 7200),
        r.SUSPEND_REASON: "IdleJobForStarvedQueue",
    }
    cluster.objects[PODS] = {
        k: v for k, v in cluster.objects[PODS].items() if not k[1].startswith("sim-sweep-")
    }
    del cluster.objects[PODGROUPS][("prod", "llm")]  # nothing waits: the queue has room
    killed_at(cluster, vc_prom, kubeconfig, "POST", "/commands$", "--policy-file", str(policy))
    assert notes(cluster, VCJ, "sim-sweep")[r.SUSPENDED_BY] == "gpu-reclaimer"

    report = cycle(vc_prom, kubeconfig, "--policy-file", str(policy))
    assert [(a["kind"], a["target"]) for a in report["plan"]["actions"]] == [
        ("resume", vc.IDLE_JOB)
    ]
    assert [o["outcome"] for o in report["outcomes"]] == ["applied"]
    (cmd,) = cluster.all(*CMD)
    assert (cmd["action"], cmd["target"]["name"]) == ("ResumeJob", "sim-sweep")
    left = notes(cluster, VCJ, "sim-sweep")
    assert r.SUSPENDED_BY not in left and r.RESUMED_AT in left


@pytest.mark.parametrize("answer", ["504", "timeout"])
def test_a_command_stored_but_answered_504_or_timed_out_is_a_stop(
    vc_prom: PromServer, volcano: tuple[FakeCluster, Path], policy: Path, answer: str
) -> None:
    cluster, kubeconfig = volcano
    if answer == "504":
        cluster.inject("POST", "/commands$", 504, store=True)
    else:  # stored at once, never answered: the client's read timeout ends the wait
        cluster.inject("POST", "/commands$", 504, store=True, delay=NEVER_S)
    first = cycle(vc_prom, kubeconfig, "--policy-file", str(policy))
    (outcome,) = first["outcomes"]
    assert outcome["outcome"] == "applied", outcome
    heard = "504" if answer == "504" else "no answer"
    assert f"the create answered {heard}; read back" in outcome["detail"], outcome
    assert notes(cluster, VCJ, "sim-sweep")[r.ROOM_FOR] == vc.PENDING_JOB  # not rolled back
    (cmd,) = cluster.all(*CMD)
    assert cmd["action"] == "AbortJob"

    second = cycle(vc_prom, kubeconfig, "--policy-file", str(policy))
    assert preempted(second) == [] and skips(second)[vc.PENDING_JOB] == "RoomInFlight"
    assert notes(cluster, VCJ, "sim-sweep")[r.ROOM_FOR] == vc.PENDING_JOB
    assert r.SUSPENDED_BY not in notes(cluster, VCJ, "train")


def test_the_event_of_a_stop_killed_after_the_patch_is_written_by_the_next_process(
    pt_prom: PromServer, pytorch: tuple[FakeCluster, Path], tmp_path: Path
) -> None:
    cluster, kubeconfig = pytorch
    policy = tmp_path / "pt-policy.yaml"
    policy.write_text(pt.POLICY)
    killed_at(cluster, pt_prom, kubeconfig, "POST", "/events$", "--policy-file", str(policy))
    assert cluster.get(*PYT, "notebook", "research")["spec"]["runPolicy"]["suspend"] is True
    assert cluster.all("", "v1", "events") == []

    second = cycle(pt_prom, kubeconfig, "--policy-file", str(policy))
    assert preempted(second) == []
    (event,) = events(cluster, "notebook", "GpuReclaimPreempted")
    assert event["involvedObject"]["kind"] == "PyTorchJob"
    assert "found stopped by" in event["message"] and pt.PENDING in event["message"]
    stopped = notes(cluster, PYT, "notebook")[r.SUSPENDED_AT]
    assert datetime.fromisoformat(event["firstTimestamp"]) == datetime.fromisoformat(stopped)

    cycle(pt_prom, kubeconfig, "--policy-file", str(policy))
    assert len(events(cluster, "notebook", "GpuReclaimPreempted")) == 1  # once


def _get(url: str) -> str:
    try:
        with urllib.request.urlopen(url, timeout=GIVE_UP_S) as resp:
            return str(resp.read().decode())
    except OSError:  # not listening yet
        return ""


def _reclaimed(url: str) -> float | None:
    for line in _get(url).splitlines():
        if line.startswith("gpu_reclaimer_reclaimed_gpu_seconds_total "):
            return float(line.split()[1])
    return None


def _cycles(url: str) -> int:
    for line in _get(url).splitlines():
        if line.startswith('gpu_reclaimer_cycles_total{result="success"} '):
            return int(float(line.split()[1]))
    return 0


def _wait(what: str, ok: Any, proc: subprocess.Popen[bytes]) -> None:
    deadline = time.monotonic() + GIVE_UP_S
    while not ok():
        assert proc.poll() is None, f"the controller exited while waiting for {what}"
        assert time.monotonic() < deadline, f"gave up waiting for {what}"
        time.sleep(0.3)


def _commands(cluster: FakeCluster) -> list[dict[str, Any]]:
    with cluster.lock:  # the controller may be writing through the server meanwhile
        return cluster.all(*CMD)


def _wait_cycles(metrics: str, n: int, proc: subprocess.Popen[bytes]) -> None:
    """Until `n` more cycles completed: the last of them began after this was called."""
    start = _cycles(metrics)
    _wait(f"{n} more cycles", lambda: _cycles(metrics) >= start + n, proc)


def test_reclaimed_gpus_count_only_a_stop_that_took_effect(
    vc_prom: PromServer, volcano: tuple[FakeCluster, Path], policy: Path, tmp_path: Path
) -> None:
    cluster, kubeconfig = volcano
    port = free_port()
    metrics = f"http://127.0.0.1:{port}/metrics"
    loop = argv(vc_prom, kubeconfig, "--policy-file", str(policy), "--interval", "1s")
    log = (tmp_path / "loop.log").open("wb")
    proc = subprocess.Popen(
        [*loop, f"--web.listen-address=127.0.0.1:{port}"], cwd=REPO, stdout=log, stderr=log
    )
    try:
        _wait("the AbortJob Command", lambda: bool(_commands(cluster)), proc)
        _wait_cycles(metrics, 3, proc)
        assert _reclaimed(metrics) == 0.0  # asked for, not yet carried out by Volcano
        (cmd,) = _commands(cluster)
        uid = cmd["target"]["uid"]
        steps = volcano_controller.reconcile(cluster)  # Volcano takes the Command up, in its order
        pods = ["sim-sweep-w-0", "sim-sweep-w-1"]
        assert steps == [
            f"Command {cmd['metadata']['name']} deleted",
            "CommandIssued Event",
            *[f"Pod {p} {step}" for p in pods for step in ("out of sync", "Terminating 30s")],
            "Job sim-sweep Aborting",
            f"PodGroup sim-sweep-{uid} deleted",
        ]
        _wait_cycles(metrics, 2, proc)  # one at least read the cluster after that
        assert _reclaimed(metrics) == 0.0  # the pods hold their GPUs while they terminate
        with cluster.lock:  # the kubelet: the pods' containers are gone
            assert sorted(p["metadata"]["name"] for p in cluster.terminating()) == pods
            assert cluster.finish_termination("research") == 2
        assert volcano_controller.reconcile(cluster) == ["Job sim-sweep Aborted"]
        _wait("reclaimed GPU-seconds", lambda: (_reclaimed(metrics) or 0.0) > 0.0, proc)
    finally:
        proc.terminate()
        proc.wait(timeout=30)
        log.close()
