"""A Kubeflow Trainer v2 TrainJob end to end: a day of idle history in a real Prometheus, the
cluster in the fake API server (whose TrainJob controller carries `suspend` to the JobSet,
`fakeapi.trainer`), each cycle a `gpu-reclaimer run --once --apply` process of its own speaking
through the real client.

research holds gpu-node-1's 4 GPUs with two idle workloads: the TrainJob `finetune` (TrainJob ->
JobSet -> Job -> 2 pods) and the JobSet `pretrain`, whose controller owner is a `Pipeline` of an
unknown CRD. prod's guaranteed job waits for 2 GPUs. The TrainJob is suspended through its own
`spec.suspend`, stays suspending while its pods hold their GPUs, and is resumed once they are gone
and nothing waits; its JobSet is never written by the reclaimer; the Pipeline's JobSet is left
alone, with the skip reason naming its owner.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from fakeapi import FakeCluster
from kube.workload_objects import meta, owner, world
from promserver import PromServer, openmetrics, start_prometheus
from runonce import applied_once

import gpu_contract as gc
from e2e.starved_world import starved_world, ts

pytestmark = [pytest.mark.prometheus, pytest.mark.slow]
NS, HISTORY_S = "research", 24 * 3600
TJ = ("trainer.kubeflow.org", "v1alpha1", "trainjobs")
JS = ("jobset.x-k8s.io", "v1alpha2", "jobsets")
PODS = ("", "v1", "pods")
TRAINJOB, FOREIGN, PENDING = f"{NS}/finetune", f"{NS}/pretrain", "prod/llm"


def _workloads() -> list[dict[str, Any]]:
    pipeline = meta("Pipeline", "example.com/v1", "nightly", "uid-pipeline")
    foreign = world("JobSet", NS)
    foreign[0]["metadata"]["ownerReferences"] = [owner(pipeline)]
    return [*world("TrainJob", NS), *foreign]


def _gpu_pods() -> list[dict[str, Any]]:
    return [o for o in _workloads() if o["kind"] == "Pod"]


@pytest.fixture(scope="module")
def prom(tmp_path_factory: pytest.TempPathFactory, now: float) -> Iterator[PromServer]:
    times = np.arange(now - HISTORY_S, now - 15.0, 60.0)
    series = []
    for i, p in enumerate(_gpu_pods()):
        lab = {
            "namespace": NS,
            "pod": p["metadata"]["name"],
            "container": "main",
            "gpu": str(i),
            "Hostname": "gpu-node-1",
            "UUID": f"GPU-{i}",
        }
        series.append((gc.POD_UTILIZATION, lab, [(float(t), 0.0) for t in times]))
        series.append((gc.POD_ALLOCATED, lab, [(float(t), 1.0) for t in times]))
    work = tmp_path_factory.mktemp("prom")
    with start_prometheus(work, history=openmetrics(series), carry_on=True) as s:
        yield s


@pytest.fixture
def cluster(now: float) -> FakeCluster:
    c = FakeCluster()
    c.add(*starved_world(now, node_gpus=4), *_workloads())
    return c


def _cycle(prom: PromServer, kubeconfig: Path) -> dict[str, Any]:
    """One `run --once --apply --json` in a process of its own, as after a restart."""
    return applied_once(prom.url, kubeconfig)


def _actions(report: dict[str, Any]) -> list[tuple[str, str]]:
    return [(a["kind"], a["target"]) for a in report["plan"]["actions"]]


def _skips(report: dict[str, Any]) -> dict[str, tuple[str, str]]:
    return {s["target"]: (s["reason"], s.get("detail", "")) for s in report["plan"]["skipped"]}


def _suspended(cluster: FakeCluster, res: tuple[str, str, str], name: str) -> bool:
    obj = cluster.get(*res, name, NS)
    assert obj is not None
    return bool(obj["spec"].get("suspend"))


def test_an_idle_trainjob_is_suspended_through_its_own_spec_and_resumed_later(
    prom: PromServer, kubeconfig: Path, cluster: FakeCluster, now: float
) -> None:
    first = _cycle(prom, kubeconfig)
    assert _actions(first) == [("preempt", TRAINJOB)]
    assert first["plan"]["actions"][0]["job_kind"] == "TrainJob"
    assert [o["outcome"] for o in first["outcomes"]] == ["applied"], first["outcomes"]
    assert _suspended(cluster, TJ, "finetune") and _suspended(cluster, JS, "finetune")
    notes = cluster.get(*TJ, "finetune", NS)["metadata"]["annotations"]
    assert notes["gpu-reclaim.io/room-for"] == PENDING
    reason, detail = _skips(first)[FOREIGN]
    assert reason == "ControlledByUnmanagedOwner" and "Pipeline research/nightly" in detail

    # its pods still hold their GPUs (no Job controller here): it is still stopping
    second = _cycle(prom, kubeconfig)
    assert _actions(second) == []
    assert _skips(second)[TRAINJOB][0] == "RoomInFlight"
    assert _skips(second)[PENDING][0] == "RoomInFlight"

    # the JobSet's Jobs delete their pods; prod's job got its GPUs; the cool-down has passed
    for p in [p for p in cluster.all(*PODS) if p["metadata"]["name"].startswith("finetune-")]:
        cluster.delete(PODS, NS, p["metadata"]["name"], dry=False)
    cluster.finish_termination(NS)  # the kubelet ends them after their grace period
    cluster.delete(("scheduling.volcano.sh", "v1beta1", "podgroups"), "prod", "llm", dry=False)
    notes["gpu-reclaim.io/suspended-at"] = ts(now - 3600)
    third = _cycle(prom, kubeconfig)
    assert _actions(third) == [("resume", TRAINJOB)]
    assert [o["outcome"] for o in third["outcomes"]] == ["applied"], third["outcomes"]
    assert not _suspended(cluster, TJ, "finetune") and not _suspended(cluster, JS, "finetune")
    assert "gpu-reclaim.io/suspended-by" not in cluster.get(*TJ, "finetune", NS)["metadata"].get(
        "annotations", {}
    )

    # the reclaimer wrote TrainJobs only, never a JobSet (the fake's controller did that)
    written = {(w.method, w.path.split("/namespaces/")[-1]) for w in cluster.writes()}
    assert ("PATCH", f"{NS}/trainjobs/finetune") in written
    assert not [w for w in cluster.writes() if "/jobsets" in w.path]
    assert not _suspended(cluster, JS, "pretrain")
