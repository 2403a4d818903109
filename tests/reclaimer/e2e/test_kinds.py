"""Every suspendable kind end to end: a day of idle history in a real Prometheus, the cluster in
the fake API server, `gpu-reclaimer run --once --apply` through the real client. The idle
workload is stopped whole, by its own kind's stop, for the guaranteed job that waits (with the
warning before a stop turned off: `e2e.test_warning` is about that)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from fakeapi import FakeCluster, served_kubeconfig
from kube.workload_objects import NAMES, WORLDS, world
from promserver import PromServer, openmetrics, start_prometheus
from runonce import run_once

import gpu_contract as gc
from e2e.starved_world import starved_world

pytestmark = [pytest.mark.prometheus, pytest.mark.slow]
HISTORY_S = 24 * 3600


def _ns(kind: str) -> str:
    return kind.lower()


def _gpu_pods(kind: str) -> list[dict[str, Any]]:
    return [o for o in world(kind, _ns(kind)) if o["kind"] == "Pod"]


@pytest.fixture(scope="module")
def prom(tmp_path_factory: pytest.TempPathFactory, now: float) -> Iterator[PromServer]:
    times = np.arange(now - HISTORY_S, now - 15.0, 60.0)
    series = []
    for kind in WORLDS:
        for i, p in enumerate(_gpu_pods(kind)):
            gpus = int(p["spec"]["containers"][0]["resources"]["limits"]["nvidia.com/gpu"])
            for g in range(gpus):
                lab = {
                    "namespace": _ns(kind),
                    "pod": p["metadata"]["name"],
                    "container": "main",
                    "gpu": str(i + g),
                    "Hostname": "gpu-node-1",
                    "UUID": f"GPU-{kind}-{i}-{g}",
                }
                series.append((gc.POD_UTILIZATION, lab, [(float(t), 0.0) for t in times]))
                series.append((gc.POD_ALLOCATED, lab, [(float(t), 1.0) for t in times]))
    work = tmp_path_factory.mktemp("prom")
    with start_prometheus(work, history=openmetrics(series), carry_on=True) as s:
        yield s


def _cluster(kind: str, now: float) -> FakeCluster:
    c = FakeCluster()
    c.add(*starved_world(now, node_gpus=2), *world(kind, _ns(kind)))
    return c


def _stopped(obj: dict[str, Any], kind: str) -> bool:
    if kind == "Notebook":
        return "kubeflow-resource-stopped" in obj["metadata"].get("annotations", {})
    spec = obj["spec"]
    return bool(spec.get("runPolicy", spec).get("suspend"))


@pytest.mark.parametrize("kind", sorted(WORLDS))
def test_an_idle_workload_of_every_kind_is_stopped_whole(
    prom: PromServer, now: float, tmp_path: Path, kind: str
) -> None:
    cluster = _cluster(kind, now)
    top = world(kind, _ns(kind))[0]
    res = cluster.resource_of(top)
    policy = tmp_path / "policy.yaml"
    policy.write_text("warning: {byKind: {}}\n")  # every kind stopped at once, Notebooks too
    with served_kubeconfig(cluster, tmp_path / "kubeconfig") as kubeconfig:
        code, report = run_once(prom, kubeconfig, "--apply", "--policy-file", str(policy))
    assert code == 0, report["cycle"]
    target = f"{_ns(kind)}/{NAMES[kind]}"
    assert [(a["kind"], a["target"]) for a in report["plan"]["actions"]] == [("preempt", target)]
    assert [o["outcome"] for o in report["outcomes"]] == ["applied"], report["outcomes"]
    stored = cluster.get(*res, NAMES[kind], _ns(kind))
    assert stored is not None and _stopped(stored, kind)
    assert stored["metadata"]["annotations"]["gpu-reclaim.io/room-for"] == "prod/llm"
    patches = [w for w in cluster.writes() if w.method == "PATCH"]
    assert patches and all(w.query.get("fieldValidation") == ["Strict"] for w in patches)
