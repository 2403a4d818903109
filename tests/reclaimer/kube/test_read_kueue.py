"""Reading Kueue's objects through the real client: the newest version the server serves, and
a cluster without Kueue read as one."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from fakeapi import FakeApiServer, FakeCluster
from kubernetes import client as k8s
from kueue_objects import kueue_world

from kube.cluster_fixture import TIMEOUT_S
from reclaimer.kube.client import api_from_configuration
from reclaimer.kube.dumps import load_cluster_file
from reclaimer.kube.read import read_cluster_sync
from reclaimer.model import ClusterView


def _read(cluster: FakeCluster) -> tuple[ClusterView, list[str]]:
    srv = FakeApiServer(cluster).start()
    try:
        api = api_from_configuration(k8s.Configuration(host=srv.url), timeout=TIMEOUT_S)
        try:
            view = read_cluster_sync(api, now=1.0)
        finally:
            api.close()
    finally:
        srv.stop()
    return view, [q.path for q in cluster.requests]


@pytest.mark.parametrize("version", ["v1beta2", "v1beta1"])
def test_kueue_is_read_in_the_version_the_server_serves(version: str) -> None:
    cluster = FakeCluster(kueue_versions=frozenset({version}))
    cluster.add(*kueue_world(version))
    view, paths = _read(cluster)
    assert f"/apis/kueue.x-k8s.io/{version}/workloads" in paths
    assert {q.name for q in view.queues if q.cluster_queue} == {"prod", "research", "team-b"}
    assert [(d.queue, d.job) for d in view.pending] == [("team-b", "team-b/llm")]
    idle = next(j for j in view.jobs if j.key == "research/idle")
    assert idle.kueue is not None and idle.kueue.api_version == f"kueue.x-k8s.io/{version}"
    assert not any("Kueue" in p for p in view.problems)


def test_a_cluster_without_kueue_leaves_its_labelled_jobs_alone() -> None:
    cluster = FakeCluster(crd_groups=frozenset())
    cluster.add(*[o for o in kueue_world() if not o["apiVersion"].startswith("kueue.x-k8s.io")])
    view, _ = _read(cluster)
    assert "Kueue not installed (kueue.x-k8s.io v1beta2, v1beta1 not served), so ignored" in (
        view.problems
    )
    idle = next(j for j in view.jobs if j.key == "research/idle")
    assert idle.kueue is None and idle.managed_by.startswith("Kueue admits it")


def test_a_dump_with_kueue_objects_reads_as_the_live_cluster(tmp_path: Path) -> None:
    objs = kueue_world("v1beta1")
    dump = tmp_path / "cluster.yaml"
    dump.write_text(yaml.safe_dump({"apiVersion": "v1", "kind": "List", "items": objs}))
    cluster = FakeCluster(kueue_versions=frozenset({"v1beta1"}))
    cluster.add(*objs)
    live, _ = _read(cluster)
    offline = load_cluster_file(dump, taken_at=1.0)
    assert offline.queues == live.queues and offline.pending == live.pending
    assert [(j.key, j.queue, j.kueue, j.managed_by) for j in offline.jobs] == [
        (j.key, j.queue, j.kueue, j.managed_by) for j in live.jobs
    ]
    assert any(j.kueue is not None for j in offline.jobs)
