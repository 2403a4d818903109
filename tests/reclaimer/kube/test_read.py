"""Reading a snapshot through the real client from the fake API server."""

from __future__ import annotations

import pytest
from fakeapi import NEVER_S, FakeApiServer, FakeCluster, write_kubeconfig
from kubernetes import client as k8s

from kube.cluster_fixture import CLUSTER_YAML, TIMEOUT_S, fixture_objects
from reclaimer.kube.client import KubeConfigError, api_from_configuration, build_api
from reclaimer.kube.dumps import load_cluster_file
from reclaimer.kube.read import ClusterReadError, read_cluster, read_cluster_sync


def test_live_read_matches_the_dump(api, server) -> None:
    live = read_cluster_sync(api, now=7.0)
    offline = load_cluster_file(CLUSTER_YAML, taken_at=7.0)
    assert live.queues == offline.queues
    assert live.nodes == offline.nodes
    assert live.pending == offline.pending
    assert [(j.key, j.kind, j.gpus, j.pods) for j in live.jobs] == [
        (j.key, j.kind, j.gpus, j.pods) for j in offline.jobs
    ]
    assert dict(live.last_actions) == dict(offline.last_actions)
    paths = {r.path for r in server.cluster.requests}
    assert "/apis/kubeflow.org/v1/pytorchjobs" in paths
    assert "/api/v1/namespaces/gpu-operator/configmaps/time-slicing-config" in paths
    assert all(r.method == "GET" for r in server.cluster.requests)


async def test_async_read(api) -> None:
    view = await read_cluster(api, now=1.0)
    assert {j.key for j in view.jobs} >= {"research/bert-train", "research/sim-sweep"}


@pytest.mark.parametrize(
    ("groups", "missing"),
    [
        (frozenset({"kubeflow.org", "jobset.x-k8s.io", "ray.io"}), ["Queues", "PodGroups", "Job"]),
        (
            frozenset({"scheduling.volcano.sh", "batch.volcano.sh"}),
            ["PyTorchJob", "JobSet", "TrainJob"],
        ),
        (frozenset(), ["Queues", "PodGroups", "Job", "PyTorchJob", "Notebook", "RayJob"]),
    ],
    ids=["no-volcano", "no-kubeflow", "neither"],
)
def test_missing_crds_disable_what_needs_them(groups: frozenset[str], missing: list[str]) -> None:
    cluster = FakeCluster(crd_groups=groups)
    cluster.add(
        *[
            o
            for o in fixture_objects()
            if "/" not in o["apiVersion"]
            or o["apiVersion"].split("/")[0] in groups | {"policy", "scheduling.k8s.io"}
        ]
    )
    srv = FakeApiServer(cluster).start()
    try:
        api = api_from_configuration(k8s.Configuration(host=srv.url), timeout=TIMEOUT_S)
        view = read_cluster_sync(api, now=0.0)
        api.close()
    finally:
        srv.stop()
    ignored = next((p for p in view.problems if p.startswith("not installed")), "")
    for name in missing:
        named = [p for p in view.problems if name in p and "not served" in p]
        assert named or f" {name}," in f" {ignored.split(': ')[-1]},", view.problems
    assert ("StatefulSet" in ignored) is False  # apps/v1 is always served
    assert any(j.key == "team-a/notebook-0" for j in view.jobs)  # bare pods still work


def test_missing_device_plugin_configmap_is_a_problem(api, cluster) -> None:
    del cluster.objects[("", "v1", "configmaps")]
    view = read_cluster_sync(api, now=0.0)
    assert any("device-plugin ConfigMap" in p for p in view.problems)


@pytest.mark.parametrize(
    ("path", "status", "delay"),
    [
        ("^/api/v1/pods$", 500, 0.0),
        ("^/api/v1/nodes$", 403, 0.0),
        ("/apis/scheduling.volcano.sh/v1beta1/queues", 500, 0.0),
        ("^/api/v1/pods$", None, NEVER_S),  # the client times out, however busy the machine
    ],
    ids=["pods-500", "nodes-forbidden", "queues-500", "pods-timeout"],
)
def test_other_failures_make_the_read_incomplete(
    api, timing_out_api, cluster: FakeCluster, path: str, status: int | None, delay: float
) -> None:
    cluster.inject("GET", path, status, delay=delay)
    with pytest.raises(ClusterReadError):
        read_cluster_sync(timing_out_api if delay else api, now=0.0)


def test_lists_are_paged(api, server, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("reclaimer.kube.read.PAGE_SIZE", 3)
    view = read_cluster_sync(api, now=0.0)
    pod_lists = [r for r in server.cluster.requests if r.path == "/api/v1/pods"]
    tokens = [r.query.get("continue", [""])[0] for r in pod_lists]
    assert len(tokens) == 3 and tokens[0] == "" and all(tokens[1:])  # opaque tokens
    assert all(r.query["fieldSelector"] for r in pod_lists)  # finished pods filtered server-side
    assert len(view.pods) == 7  # every live GPU pod, across pages


def test_an_expired_continue_token_restarts_the_list_once(
    api, server, monkeypatch: pytest.MonkeyPatch
) -> None:
    """kube-apiserver answers 410 Expired once etcd compacted the list's revision."""
    monkeypatch.setattr("reclaimer.kube.read.PAGE_SIZE", 3)
    server.cluster.compact_during = "pods"  # etcd compacts while the pod list is being paged
    view = read_cluster_sync(api, now=0.0)
    pod_lists = [r for r in server.cluster.requests if r.path == "/api/v1/pods"]
    starts = [r for r in pod_lists if not r.query.get("continue")]
    assert len(starts) == 2  # the list began again after the 410
    assert len(view.pods) == 7


def test_build_api_from_a_kubeconfig_file(server, tmp_path) -> None:
    kubeconfig = write_kubeconfig(tmp_path / "config", server.url, token="t0ken")
    api = build_api(str(kubeconfig), timeout=TIMEOUT_S)
    try:
        assert read_cluster_sync(api, now=0.0).queues
    finally:
        api.close()


def test_build_api_refuses_a_bad_kubeconfig(tmp_path) -> None:
    with pytest.raises(KubeConfigError):
        build_api(str(tmp_path / "missing"))


@pytest.fixture
def waits() -> list[float]:
    return []


@pytest.fixture
def patient_api(server: FakeApiServer, waits: list[float]):
    """The real client on the fake API server; its waits before a throttled call are recorded
    instead of slept."""
    kube = api_from_configuration(
        k8s.Configuration(host=server.url), timeout=TIMEOUT_S, sleep=waits.append
    )
    try:
        yield kube
    finally:
        kube.close()


@pytest.mark.parametrize(
    ("retry_after", "waited"),
    [("2", [2.0, 2.0]), ("3600", [10.0, 10.0]), ("soon", [1.0, 1.0])],
    ids=["as-asked", "bounded", "unreadable-header-waits-1s"],
)
def test_a_throttled_list_waits_as_retry_after_says_and_logs_one_line_each(
    patient_api,
    cluster: FakeCluster,
    waits: list[float],
    caplog: pytest.LogCaptureFixture,
    retry_after: str,
    waited: list[float],
) -> None:
    """kube-apiserver sheds load with 429 and a Retry-After (priority and fairness): the pod
    list is asked again after it (at most 10 s), and the read completes."""
    cluster.inject("GET", "^/api/v1/pods$", 429, times=2, retry_after=retry_after)
    view = read_cluster_sync(patient_api, now=0.0)
    assert len(view.pods) == 7
    assert waits == waited
    lines = [r for r in caplog.records if "throttled" in r.getMessage()]
    assert len(lines) == 2 and all(r.exc_info is None for r in lines)  # no traceback
    assert "listing pods: throttled by the API server (429" in lines[0].getMessage()


def test_a_list_still_throttled_after_its_retries_makes_the_read_incomplete(
    patient_api, cluster: FakeCluster, waits: list[float]
) -> None:
    cluster.inject("GET", "^/api/v1/nodes$", 429, times=100, retry_after="1")
    with pytest.raises(ClusterReadError, match="listing nodes: 429 Too Many Requests"):
        read_cluster_sync(patient_api, now=0.0)
    assert waits == [1.0, 1.0, 1.0]  # THROTTLE_RETRIES, then it gives up
