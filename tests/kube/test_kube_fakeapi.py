"""The fake API server itself answers like the real one where the reclaimer depends on it."""

from __future__ import annotations

import pytest
from fakeapi import FakeCluster

from reclaimer.kube.client import KubeError, call

NS = "team-a"


def _pods(cluster: FakeCluster, n_running: int, n_pending: int = 0) -> None:
    for i in range(n_running + n_pending):
        phase = "Running" if i < n_running else "Pending"
        cluster.add(
            {
                "apiVersion": "v1",
                "kind": "Pod",
                "metadata": {"name": f"w-{i}", "namespace": NS, "labels": {"app": "w"}},
                "status": {"phase": phase},
            }
        )


def _pdb(cluster: FakeCluster, name: str, **spec: object) -> None:
    cluster.add(
        {
            "apiVersion": "policy/v1",
            "kind": "PodDisruptionBudget",
            "metadata": {"name": name, "namespace": NS},
            "spec": {"selector": {"matchLabels": {"app": "w"}}, **spec},
        }
    )


def _evict(api, name: str = "w-0") -> int:
    body = {
        "apiVersion": "policy/v1",
        "kind": "Eviction",
        "metadata": {"name": name, "namespace": NS},
    }
    try:
        call(api, api.core.create_namespaced_pod_eviction, name, NS, body)
    except KubeError as exc:
        return exc.status
    return 201


@pytest.mark.parametrize(
    ("running", "pending", "spec", "status"),
    [
        (3, 0, {"minAvailable": 2}, 201),
        (2, 0, {"minAvailable": 2}, 429),
        (4, 0, {"minAvailable": "50%"}, 201),
        (2, 0, {"minAvailable": "100%"}, 429),
        (3, 0, {"maxUnavailable": 1}, 201),
        (2, 1, {"maxUnavailable": 1}, 429),
        (2, 0, {"maxUnavailable": "0%"}, 429),
    ],
    ids=[
        "min-int-ok",
        "min-int-blocked",
        "min-pct-ok",
        "min-pct-blocked",
        "max-ok",
        "max-already-unavailable",
        "max-pct-zero",
    ],
)
def test_eviction_honours_pdbs(
    api, cluster: FakeCluster, running: int, pending: int, spec: dict[str, object], status: int
) -> None:
    _pods(cluster, running, pending)
    _pdb(cluster, "budget", **spec)
    assert _evict(api) == status
    assert (cluster.get("", "v1", "pods", "w-0", NS) is None) == (status == 201)


def test_two_pdbs_answer_500(api, cluster: FakeCluster) -> None:
    _pods(cluster, 3)
    _pdb(cluster, "one", minAvailable=0)
    _pdb(cluster, "two", minAvailable=0)
    assert _evict(api) == 500


def test_stale_resource_version_conflicts_and_dry_run_stores_nothing(
    api, cluster: FakeCluster
) -> None:
    _pods(cluster, 1)
    pod = call(api, api.core.read_namespaced_pod, "w-0", NS)
    stale = {
        "metadata": {"resourceVersion": pod["metadata"]["resourceVersion"], "labels": {"x": "1"}}
    }
    call(
        api,
        api.core.patch_namespaced_pod,
        "w-0",
        NS,
        stale,
        _content_type="application/merge-patch+json",
    )
    with pytest.raises(KubeError) as err:
        call(
            api,
            api.core.patch_namespaced_pod,
            "w-0",
            NS,
            stale,
            _content_type="application/merge-patch+json",
        )
    assert err.value.status == 409
    before = cluster.get("", "v1", "pods", "w-0", NS)["metadata"]["labels"]
    out = call(
        api,
        api.core.patch_namespaced_pod,
        "w-0",
        NS,
        {"metadata": {"labels": {"y": "2"}}},
        dry_run="All",
        _content_type="application/merge-patch+json",
    )
    assert out["metadata"]["labels"]["y"] == "2"
    assert cluster.get("", "v1", "pods", "w-0", NS)["metadata"]["labels"] == before


def test_merge_patch_null_removes_keys(api, cluster: FakeCluster) -> None:
    _pods(cluster, 1)
    call(
        api,
        api.core.patch_namespaced_pod,
        "w-0",
        NS,
        {"metadata": {"labels": {"app": None}}},
        _content_type="application/merge-patch+json",
    )
    assert "app" not in cluster.get("", "v1", "pods", "w-0", NS)["metadata"]["labels"]
