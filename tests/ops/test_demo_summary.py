"""The demo's namespace table against a real Prometheus: idle GPU-hours are the GPU's hours,
shared among the pods that share it, never more than the namespace's physical GPU-hours."""

from __future__ import annotations

import importlib
import sys
import time
from collections.abc import Iterator
from types import ModuleType

import numpy as np
import pytest
from promserver import PromServer, openmetrics, start_prometheus
from repo_paths import REPO

import gpu_contract as gc

pytestmark = [pytest.mark.prometheus, pytest.mark.slow]
HOURS = 6
# (namespace, pod) -> (GPU UUID, utilization): G1 shared by two idle pods of `a`; G3 shared by an
# idle pod of `a` and a busy one of `c`; G2 held whole by an idle pod of `b`.
PODS = {
    ("a", "p1"): ("G1", 0.0),
    ("a", "p2"): ("G1", 0.0),
    ("a", "p3"): ("G3", 0.0),
    ("c", "busy"): ("G3", 0.7),
    ("b", "whole"): ("G2", 0.0),
}


@pytest.fixture(scope="module")
def summary() -> Iterator[ModuleType]:
    sys.path.insert(0, str(REPO / "scripts"))
    try:
        yield importlib.import_module("demo_summary")
    finally:
        sys.path.remove(str(REPO / "scripts"))


@pytest.fixture(scope="module")
def prom(tmp_path_factory: pytest.TempPathFactory) -> Iterator[PromServer]:
    now = time.time()
    times = np.arange(now - (HOURS + 1) * 3600, now - 15.0, 60.0)
    series = []
    for (ns, pod), (uuid, level) in PODS.items():
        lab = {"namespace": ns, "pod": pod, "container": "m", "gpu": "0", "UUID": uuid}
        lab["Hostname"] = "node-1"
        series.append((gc.POD_UTILIZATION, lab, [(float(t), level) for t in times]))
        series.append((gc.POD_ALLOCATED, lab, [(float(t), 1.0) for t in times]))
    with start_prometheus(tmp_path_factory.mktemp("prom"), history=openmetrics(series)) as s:
        yield s


def test_idle_gpu_hours_share_a_gpu_among_its_pods(summary: ModuleType, prom: PromServer) -> None:
    idle = summary.idle_gpu_hours(prom.url, f"{HOURS}h")
    assert idle.keys() == {"a", "b"}
    assert idle["a"] == pytest.approx(1.5 * HOURS, abs=0.2)  # all of G1, half of G3
    assert idle["b"] == pytest.approx(HOURS, abs=0.2)


def test_namespace_table_says_slots_and_gpus(summary: ModuleType, prom: PromServer) -> None:
    rows = [line.split() for line in summary._namespaces(prom.url, f"{HOURS}h")]
    assert rows[0] == ["namespace", "GPU", "slots", "GPUs", "util", "6h", "idle", "GPU-hours", "6h"]
    assert rows[1][:4] == ["a", "3", "1.5", "0%"]
    assert float(rows[1][4]) == pytest.approx(1.5 * HOURS, abs=0.2)
    assert rows[3][:4] == ["c", "1", "0.5", "70%"]
    assert float(rows[3][4]) == 0.0
