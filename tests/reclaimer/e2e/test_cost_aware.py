"""Cost-aware stops end to end: a day of history in a real Prometheus, the cluster in the fake
API server, `gpu-reclaimer run --once` through the real client under a policy file with
`costAwareStops`. The idle PyTorchJob is stopped for the guaranteed job that waits when what it
frees outweighs what it risks, and the plan says both sides; with a cold start that outweighs
the gain it is left standing, saying so."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from fakeapi import FakeCluster, served_kubeconfig
from kube.workload_objects import world
from promserver import PromServer, openmetrics, start_prometheus
from runonce import run_once

import gpu_contract as gc
from e2e.starved_world import starved_world

pytestmark = [pytest.mark.prometheus, pytest.mark.slow]
HISTORY_S = 24 * 3600
NS = "pytorchjob"
KIND = "PyTorchJob"


def _busy(t: np.ndarray, now: float) -> np.ndarray:
    """Busy (40%) for 5 minutes of every 2 hours, then idle over the last 4 hours: the model has
    busy windows to learn from, and its probability is below 1."""
    bursts = ((t - (now - HISTORY_S)) % 7200.0) < 300.0
    return np.where(bursts & (t < now - 4 * 3600), 40.0, 0.0)


@pytest.fixture(scope="module")
def prom(tmp_path_factory: pytest.TempPathFactory, now: float) -> Iterator[PromServer]:
    times = np.arange(now - HISTORY_S, now - 15.0, 60.0)
    values = _busy(times, now)
    series = []
    pods = [o for o in world(KIND, NS) if o["kind"] == "Pod"]
    for i, p in enumerate(pods):
        lab = {
            "namespace": NS,
            "pod": p["metadata"]["name"],
            "container": "main",
            "gpu": str(i),
            "Hostname": "gpu-node-1",
            "UUID": f"GPU-{i}",
        }
        util = [(float(t), float(v)) for t, v in zip(times, values, strict=True)]
        series.append((gc.POD_UTILIZATION, lab, util))
        series.append((gc.POD_ALLOCATED, lab, [(float(t), 1.0) for t in times]))
    work = tmp_path_factory.mktemp("prom")
    with start_prometheus(work, history=openmetrics(series), carry_on=True) as s:
        yield s


def _once(prom: PromServer, now: float, tmp_path: Path, policy: str) -> dict[str, Any]:
    cluster = FakeCluster()
    cluster.add(*starved_world(now, node_gpus=2), *world(KIND, NS))
    path = tmp_path / "policy.yaml"
    path.write_text(policy)
    with served_kubeconfig(cluster, tmp_path / "kubeconfig") as kubeconfig:
        code, report = run_once(prom, kubeconfig, "--policy-file", str(path))
    assert code == 0, report["cycle"]
    return report


def test_the_stop_says_what_it_frees_and_what_it_risks(
    prom: PromServer, now: float, tmp_path: Path
) -> None:
    report = _once(prom, now, tmp_path, "costAwareStops: true\ncoldStart: 2m\n")

    (action,) = report["plan"]["actions"]
    assert (action["kind"], action["target"]) == ("preempt", f"{NS}/train")
    assert action["reason"] == "IdleJobForStarvedQueue"
    detail = action["evidence"]["detail"]
    assert "frees 2 GPUs for 15m of waiting demand; risks " in detail, detail
    assert "of work and a 2m cold start" in detail, detail


def test_a_cold_start_that_outweighs_the_gain_leaves_the_job_standing(
    prom: PromServer, now: float, tmp_path: Path
) -> None:
    # a week to load again: (1 - P) x 2 GPUs x 7 d outweighs P x 2 GPUs x 15 m unless P > 0.998
    report = _once(prom, now, tmp_path, "costAwareStops: true\ncoldStart: 7d\n")

    assert report["plan"]["actions"] == []
    skips = {s["target"]: s for s in report["plan"]["skipped"]}
    spared = skips[f"{NS}/train"]
    assert spared["reason"] == "StopCostsMoreThanItFrees", spared
    assert "for prod/llm: frees 2 GPUs for 15m of waiting demand" in spared["detail"]
    assert "a 7d cold start" in spared["detail"]
