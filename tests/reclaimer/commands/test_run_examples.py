"""End to end on the example cluster: live `gpu-exporter --backend sim` -> real Prometheus ->
`gpu-reclaimer run --once` -> real `kubernetes` client -> fake API server holding
`kubectl kustomize deploy/examples` plus `deploy/examples/sim/cluster-state.yaml`.

The sim exporters (one per example node, pods named as deploy/examples names them) give the live
data; four hours of matching per-pod history before it are backfilled with promtool, because the
forecaster needs an hour of history before it calls anything idle. The repository's recording
rules are loaded too: being minutes old, they must be passed over for the raw series.
Dry-run must name the idle research job and change nothing; --apply must suspend that PyTorchJob
(`runPolicy.suspend: true`) and leave an Event.
"""

from __future__ import annotations

import copy
import json
import subprocess
import time
import urllib.parse
import urllib.request
from collections.abc import Iterator
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import kustomize
import pytest
import yaml
from fakeapi import FakeCluster, served_kubeconfig
from promserver import PromServer, openmetrics, start_prometheus
from repo_paths import REPO
from runonce import run_once
from simexporter import EXAMPLE_NODES, sim_exporter

import gpu_contract as gc

pytestmark = [pytest.mark.prometheus, pytest.mark.slow]


EXAMPLES = REPO / "deploy" / "examples"
SIM = EXAMPLES / "sim"
IDLE_JOB, PENDING = "research/bert-finetune", "production/llm-pretrain"
LEVEL = {"bert-finetune": 0.0, "resnet-train": 0.9}  # notebooks: bursts, see _level


def example_objects() -> list[dict[str, Any]]:
    docs = list(yaml.safe_load_all(kustomize.build(EXAMPLES))) + list(
        yaml.safe_load_all((SIM / "cluster-state.yaml").read_text(encoding="utf-8"))
    )
    return [d for d in docs if d]


def _level(pod: str, i: int) -> float:
    for prefix, level in LEVEL.items():
        if pod.startswith(prefix):
            return level
    return 0.4 if i % 20 == 0 else 0.0  # a notebook: the odd interactive burst


def backfilled_history(end: float, hours: float = 4.0, step: float = 30.0) -> str:
    series = []
    for node in EXAMPLE_NODES:
        for w in yaml.safe_load((SIM / f"{node}.workloads.yaml").read_text(encoding="utf-8")):
            lab = {
                "namespace": w["namespace"],
                "pod": w["pod"],
                "container": w["container"],
                "Hostname": node,
                "job": "gpu-exporter",
            }
            n = int(hours * 3600 / step)
            ts = [end - (n - i) * step for i in range(n + 1)]
            series.append(
                (gc.POD_UTILIZATION, lab, [(t, _level(w["pod"], i)) for i, t in enumerate(ts)])
            )
            series.append((gc.POD_ALLOCATED, lab, [(t, 1.0) for t in ts]))
    return openmetrics(series)


GIVE_UP_S = 300.0  # only a hung server takes this long, even on a busy machine


def _get(url: str) -> bytes:
    try:
        with urllib.request.urlopen(url, timeout=GIVE_UP_S) as r:
            return bytes(r.read())
    except OSError:
        return b""


def _until(pred: Any, what: str, proc: subprocess.Popen[bytes] | None = None) -> None:
    deadline = time.monotonic() + GIVE_UP_S
    while not pred():
        assert proc is None or proc.poll() is None, f"{what}: process exited"
        assert time.monotonic() < deadline, f"gave up waiting for {what}"
        time.sleep(0.3)


def _scraped(url: str) -> bool:
    q = urllib.parse.urlencode({"query": f"count(count_over_time({gc.POD_ALLOCATED}[30s]) >= 2)"})
    body = json.loads(_get(f"{url}/api/v1/query?{q}") or b"{}")
    result = body.get("data", {}).get("result", [])
    return bool(result) and float(result[0]["value"][1]) >= 6


@pytest.fixture(scope="module")
def prom(tmp_path_factory: pytest.TempPathFactory) -> Iterator[PromServer]:
    work = tmp_path_factory.mktemp("examples")
    with ExitStack() as stack:
        targets = [stack.enter_context(sim_exporter(work, n, g)) for n, g in EXAMPLE_NODES.items()]
        server = stack.enter_context(
            start_prometheus(
                work,
                history=backfilled_history(time.time() - 20),
                scrape_targets=targets,
                rule_files=[REPO / "rules" / "gpu-reclaim.rules.yml"],
            )
        )
        _until(lambda: _scraped(server.url), "live scrapes of both exporters")
        yield server


@pytest.fixture
def cluster() -> FakeCluster:
    c = FakeCluster()
    c.add(*example_objects())
    return c


@pytest.fixture
def kubeconfig(cluster: FakeCluster, tmp_path: Path) -> Iterator[Path]:
    with served_kubeconfig(cluster, tmp_path / "kubeconfig") as path:
        yield path


def bert(cluster: FakeCluster) -> dict[str, Any]:
    job = cluster.get("kubeflow.org", "v1", "pytorchjobs", "bert-finetune", "research")
    assert job is not None
    return job


def test_dry_run_names_the_idle_example_job(
    prom: PromServer, kubeconfig: Path, cluster: FakeCluster
) -> None:
    before = copy.deepcopy(cluster.objects)
    code, report = run_once(prom, kubeconfig)
    assert code == 0, report["cycle"]
    preempts = [a for a in report["plan"]["actions"] if a["kind"] == "preempt"]
    assert [a["target"] for a in preempts] == [IDLE_JOB], json.dumps(
        {k: report[k] for k in ("plan", "forecasts", "quality", "fleet")}, indent=1
    )
    assert preempts[0]["evidence"]["for_pending"] == PENDING
    assert report["fleet"]["idle_gpus_by_namespace"].get("research") == 2
    assert cluster.objects == before
    assert all(w.dry_run for w in cluster.writes())


def test_apply_suspends_the_example_job_with_an_event(
    prom: PromServer, kubeconfig: Path, cluster: FakeCluster
) -> None:
    code, report = run_once(prom, kubeconfig, "--apply")
    assert code == 0, report["cycle"]
    done = [o for o in report["outcomes"] if o["action"]["target"] == IDLE_JOB]
    assert [o["outcome"] for o in done] == ["applied"]
    assert bert(cluster)["spec"]["runPolicy"]["suspend"] is True
    events = [
        e for e in cluster.all("", "v1", "events") if e["involvedObject"]["name"] == "bert-finetune"
    ]
    assert events and "IdleJobForStarvedQueue" in events[0]["message"]
