"""End to end: real Prometheus (24 h of backfilled history) -> `gpu-reclaimer run --once` -> the
real `kubernetes` client -> the fake API server holding a small Volcano cluster.

The history is backfilled (promtool) rather than scraped from a live `gpu-exporter --backend sim`:
the forecaster needs an hour of history at least, which a live scrape cannot produce inside a
test. Dry-run must name the idle reclaimable job and change nothing; --apply must abort it through
a Volcano `Command` and leave a Kubernetes Event.
"""

from __future__ import annotations

import copy
import json
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from e2e_world import BUSY_JOB, IDLE_JOB, PENDING_JOB, cluster_objects, history, wall_now
from fakeapi import FakeCluster, served_kubeconfig
from promserver import PromServer, free_port, start_prometheus
from repo_paths import REPO
from runonce import run_once

pytestmark = [pytest.mark.prometheus, pytest.mark.slow]


@pytest.fixture(scope="module")
def now() -> float:
    return wall_now()


@pytest.fixture(scope="module")
def prom(tmp_path_factory: pytest.TempPathFactory, now: float) -> Iterator[PromServer]:
    work = tmp_path_factory.mktemp("prom")
    with start_prometheus(work, history=history(now), carry_on=True) as server:
        yield server


@pytest.fixture
def cluster(now: float) -> FakeCluster:
    c = FakeCluster()
    c.add(*cluster_objects(now))
    return c


@pytest.fixture
def kubeconfig(cluster: FakeCluster, tmp_path: Path) -> Iterator[Path]:
    with served_kubeconfig(cluster, tmp_path / "kubeconfig") as path:
        yield path


def commands(cluster: FakeCluster) -> list[dict]:
    return cluster.all("bus.volcano.sh", "v1alpha1", "commands")


def events(cluster: FakeCluster) -> list[dict]:
    return cluster.all("", "v1", "events")


def test_dry_run_names_the_idle_job_and_changes_nothing(
    prom: PromServer, kubeconfig: Path, cluster: FakeCluster
) -> None:
    before = copy.deepcopy(cluster.objects)
    code, report = run_once(prom, kubeconfig)
    assert code == 0, report["cycle"]
    assert report["dry_run"] is True
    (action,) = report["plan"]["actions"]
    assert (action["kind"], action["target"]) == ("preempt", IDLE_JOB)
    assert action["evidence"]["for_pending"] == PENDING_JOB
    assert action["evidence"]["forecast"]["idle"] is True
    assert BUSY_JOB in {s["target"] for s in report["plan"]["skipped"]}
    assert [o["outcome"] for o in report["outcomes"]] == ["dry_run"]
    assert report["fleet"]["idle_gpus_by_namespace"] == {"research": 2}
    writes = cluster.writes()
    assert writes and all(w.dry_run for w in writes)  # server-side dry-run only
    assert cluster.objects == before
    assert commands(cluster) == [] and events(cluster) == []


def test_apply_aborts_the_job_and_records_an_event(
    prom: PromServer, kubeconfig: Path, cluster: FakeCluster
) -> None:
    code, report = run_once(prom, kubeconfig, "--apply")
    assert code == 0, report["cycle"]
    assert report["dry_run"] is False
    assert [o["outcome"] for o in report["outcomes"]] == ["applied"]
    (cmd,) = commands(cluster)
    assert cmd["action"] == "AbortJob"
    assert cmd["target"]["name"] == IDLE_JOB.split("/")[1]
    evs = [e for e in events(cluster) if e["involvedObject"]["name"] == "sim-sweep"]
    assert evs and "IdleJobForStarvedQueue" in evs[0]["message"]


GIVE_UP_S = 300.0  # only a hung controller takes this long, even on a busy machine


def _get(url: str) -> tuple[int, str]:
    try:
        with urllib.request.urlopen(url, timeout=GIVE_UP_S) as r:
            return r.status, r.read().decode()
    except urllib.error.HTTPError as err:
        return err.code, ""
    except OSError:
        return 0, ""


def _wait(pred: Callable[[], bool], proc: subprocess.Popen[bytes], what: str) -> None:
    deadline = time.monotonic() + GIVE_UP_S
    while not pred():
        assert proc.poll() is None, f"controller exited early while waiting for {what}"
        assert time.monotonic() < deadline, f"gave up waiting for {what}"
        time.sleep(0.2)


def test_loop_serves_holds_the_lease_and_stops_cleanly_on_sigterm(
    prom: PromServer, kubeconfig: Path, cluster: FakeCluster, tmp_path: Path
) -> None:
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    argv = [
        sys.executable,
        "-m",
        "reclaimer",
        "run",
        "--prometheus-url",
        prom.url,
        "--kubeconfig",
        str(kubeconfig),
        "--interval",
        "1s",
        "--leader-elect",
        f"--web.listen-address=127.0.0.1:{port}",
    ]
    log = (tmp_path / "controller.log").open("wb")
    proc = subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT, cwd=REPO)
    try:
        _wait(lambda: _get(base + "/readyz")[0] == 200, proc, "/readyz")

        def leases() -> list[dict[str, Any]]:
            with cluster.lock:  # the controller renews it meanwhile
                return cluster.all("coordination.k8s.io", "v1", "leases")

        _wait(
            lambda: bool(leases()) and bool(leases()[0]["spec"].get("holderIdentity")),
            proc,
            "the lease",
        )
        _wait(lambda: '"acted": true' in _get(base + "/plan")[1], proc, "a cycle as leader")
        _, body = _get(base + "/plan")
        report = json.loads(body)
        assert report["plan"]["actions"][0]["target"] == IDLE_JOB
        _, metrics = _get(base + "/metrics")
        assert "gpu_reclaimer_is_leader 1.0" in metrics
        assert "gpu_reclaimer_dry_run 1.0" in metrics
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=GIVE_UP_S) == 0  # the cycle in flight ends first
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        log.close()
    assert leases()[0]["spec"].get("holderIdentity") is None  # released on the way out
    real = [w for w in cluster.writes() if not w.dry_run and "/leases" not in w.path]
    assert real == []  # dry-run: only the Lease is written for real
    assert commands(cluster) == []
