"""The fake API server itself answers like the real one where the reclaimer depends on it."""

from __future__ import annotations

import pytest
from fakeapi import FakeCluster

from reclaimer.kube.client import KubeError, call

NS = "team-a"


def _pods(cluster: FakeCluster, n_running: int, n_pending: int = 0, ns: str = NS) -> None:
    for i in range(n_running + n_pending):
        phase = "Running" if i < n_running else "Pending"
        cluster.add(
            {
                "apiVersion": "v1",
                "kind": "Pod",
                "metadata": {"name": f"w-{i}", "namespace": ns, "labels": {"app": "w"}},
                "status": {"phase": phase},
            }
        )


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


SEL = "selectors"


def _list_pods(api, **kw: object) -> list[str]:
    page = call(api, api.core.list_namespaced_pod, SEL, **kw)
    return [p["metadata"]["name"] for p in page["items"]]


@pytest.mark.parametrize(
    ("selector", "names"),
    [
        ("status.phase=Running", ["w-0", "w-1"]),
        ("status.phase!=Running", ["w-2"]),
        ("status.phase!=Succeeded,status.phase!=Pending", ["w-0", "w-1"]),
        ("metadata.name==w-1", ["w-1"]),
    ],
)
def test_field_selectors_are_honoured(
    api, cluster: FakeCluster, selector: str, names: list[str]
) -> None:
    _pods(cluster, 2, 1, ns=SEL)
    assert _list_pods(api, field_selector=selector) == names


def test_an_unsupported_field_selector_answers_400(api, cluster: FakeCluster) -> None:
    _pods(cluster, 1, ns=SEL)
    with pytest.raises(KubeError) as caught:
        _list_pods(api, field_selector="spec.containers=x")
    assert caught.value.status == 400 and "field label not supported" in caught.value.message


@pytest.mark.parametrize(
    ("selector", "names"),
    [
        ("app=w", ["w-0", "w-1"]),
        ("app!=w", ["x-0"]),
        ("tier in (gpu, cpu)", ["x-0"]),
        ("tier notin (gpu)", ["w-0", "w-1"]),
        ("tier", ["x-0"]),
        ("!tier", ["w-0", "w-1"]),
        ("app=w,tier", []),
    ],
)
def test_label_selectors_have_the_api_semantics(
    api, cluster: FakeCluster, selector: str, names: list[str]
) -> None:
    _pods(cluster, 2, ns=SEL)
    cluster.add(
        {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": "x-0", "namespace": SEL, "labels": {"app": "x", "tier": "gpu"}},
            "status": {"phase": "Running"},
        }
    )
    assert _list_pods(api, label_selector=selector) == names


def test_an_expired_continue_token_answers_410(api, cluster: FakeCluster) -> None:
    _pods(cluster, 4, ns=SEL)
    page = call(api, api.core.list_namespaced_pod, SEL, limit=2)
    cluster.compact()
    with pytest.raises(KubeError) as caught:
        call(
            api, api.core.list_namespaced_pod, SEL, limit=2, _continue=page["metadata"]["continue"]
        )
    assert caught.value.status == 410 and "too old" in caught.value.message


PYT = ("kubeflow.org", "v1", "pytorchjobs")


def _pytorchjob(cluster: FakeCluster) -> None:
    cluster.add(
        {
            "apiVersion": "kubeflow.org/v1",
            "kind": "PyTorchJob",
            "metadata": {"name": "j", "namespace": SEL},
            "spec": {"runPolicy": {"cleanPodPolicy": "None"}, "pytorchReplicaSpecs": {}},
        }
    )


def _patch_suspend(api, **kw: object) -> dict:
    body = {"spec": {"runPolicy": {"suspend": True}}}
    custom = api.custom
    return call(api, custom.patch_namespaced_custom_object, *PYT[:2], SEL, PYT[2], "j", body, **kw)


def test_an_old_crd_prunes_unknown_fields_silently(api, cluster: FakeCluster) -> None:
    cluster.training_operator = "v1.6"
    _pytorchjob(cluster)
    answer = _patch_suspend(api, _content_type="application/merge-patch+json")
    assert "suspend" not in answer["spec"]["runPolicy"]
    assert "suspend" not in cluster.get(*PYT, "j", SEL)["spec"]["runPolicy"]


def test_strict_field_validation_refuses_what_the_crd_would_prune(
    api, cluster: FakeCluster
) -> None:
    cluster.training_operator = "v1.6"
    _pytorchjob(cluster)
    with pytest.raises(KubeError) as caught:
        _patch_suspend(api, field_validation="Strict", _content_type="application/merge-patch+json")
    assert caught.value.status == 400
    assert 'unknown field "spec.runPolicy.suspend"' in caught.value.message
    cluster.training_operator = "v1.7"
    answer = _patch_suspend(
        api, field_validation="Strict", _content_type="application/merge-patch+json"
    )
    assert answer["spec"]["runPolicy"]["suspend"] is True


def _patch_run_policy(api, policy: dict, **kw: object) -> dict:
    body = {"spec": {"runPolicy": policy}}
    custom = api.custom
    return call(api, custom.patch_namespaced_custom_object, *PYT[:2], SEL, PYT[2], "j", body, **kw)


@pytest.mark.parametrize("release", ["v1.7", "v1.8"])
def test_managed_by_before_v1_9_is_an_unknown_field(api, cluster: FakeCluster, release) -> None:
    """`runPolicy.managedBy` arrived in training-operator v1.9.0: older CRDs prune it, and a
    strict patch of it is refused while the same patch of `suspend` goes through."""
    cluster.training_operator = release
    _pytorchjob(cluster)
    multikueue = {"managedBy": "kueue.x-k8s.io/multikueue"}
    strict = {"field_validation": "Strict", "_content_type": "application/merge-patch+json"}
    with pytest.raises(KubeError) as caught:
        _patch_run_policy(api, multikueue, **strict)
    assert caught.value.status == 400
    assert 'unknown field "spec.runPolicy.managedBy"' in caught.value.message
    assert _patch_run_policy(api, {"suspend": True}, **strict)["spec"]["runPolicy"]["suspend"]
    lax = _patch_run_policy(api, multikueue, _content_type="application/merge-patch+json")
    assert "managedBy" not in lax["spec"]["runPolicy"]
    assert "managedBy" not in cluster.get(*PYT, "j", SEL)["spec"]["runPolicy"]


def test_managed_by_from_v1_9_is_stored(api, cluster: FakeCluster) -> None:
    cluster.training_operator = "v1.9"
    _pytorchjob(cluster)
    multikueue = {"managedBy": "kueue.x-k8s.io/multikueue"}
    answer = _patch_run_policy(
        api, multikueue, field_validation="Strict", _content_type="application/merge-patch+json"
    )
    assert answer["spec"]["runPolicy"]["managedBy"] == "kueue.x-k8s.io/multikueue"
    assert cluster.get(*PYT, "j", SEL)["spec"]["runPolicy"]["managedBy"] == (
        "kueue.x-k8s.io/multikueue"
    )


def test_strategic_merge_patch_on_a_custom_resource_answers_415(api, cluster: FakeCluster) -> None:
    _pytorchjob(cluster)
    with pytest.raises(KubeError) as caught:
        _patch_suspend(api, _content_type="application/strategic-merge-patch+json")
    assert caught.value.status == 415


GRACE_NS = "grace"


def _bound_pod(cluster: FakeCluster, name: str, **spec: object) -> None:
    cluster.add(
        {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": name, "namespace": GRACE_NS},
            "spec": {"containers": [{"name": "c", "image": "c:1"}], **spec},
            "status": {"phase": "Running"},
        }
    )


def test_a_deleted_pod_terminates_for_its_grace_period(api, cluster: FakeCluster) -> None:
    _bound_pod(cluster, "default-grace", nodeName="n1")
    _bound_pod(cluster, "short-grace", nodeName="n1", terminationGracePeriodSeconds=5)
    _bound_pod(cluster, "unscheduled")
    for name in ("default-grace", "short-grace", "unscheduled"):
        call(api, api.core.delete_namespaced_pod, name, GRACE_NS)
    assert (
        cluster.get("", "v1", "pods", "unscheduled", GRACE_NS) is None
    )  # no node: deleted at once
    marked = {p["metadata"]["name"]: p["metadata"] for p in cluster.terminating()}
    assert {n: m["deletionGracePeriodSeconds"] for n, m in marked.items()} == {
        "default-grace": 30,
        "short-grace": 5,
    }
    listed = call(api, api.core.list_namespaced_pod, GRACE_NS)["items"]
    assert {p["metadata"]["name"] for p in listed} == {"default-grace", "short-grace"}
    assert cluster.advance(10) == 1  # the kubelet is done with the 5 s one
    assert [p["metadata"]["name"] for p in cluster.terminating()] == ["default-grace"]
    assert cluster.finish_termination() == 1 and cluster.terminating() == []
