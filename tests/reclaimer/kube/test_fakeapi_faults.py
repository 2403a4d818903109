"""The fake API server's injected faults do what the tests that use them say: a write carried out
but answered 504 (`store`), a hook run at exactly the request named (`before`)."""

from __future__ import annotations

from typing import Any

from fakeapi import FakeCluster

from reclaimer.kube.client import KubeError, call

CMD = ("bus.volcano.sh", "v1alpha1", "commands")


def _command(name: str) -> dict[str, Any]:
    target = {
        "apiVersion": "batch.volcano.sh/v1alpha1",
        "kind": "Job",
        "name": "sim-sweep",
        "uid": "33333333-0000-0000-0000-000000000001",
        "controller": True,
    }
    return {
        "apiVersion": "bus.volcano.sh/v1alpha1",
        "kind": "Command",
        "metadata": {"name": name, "ownerReferences": [dict(target)]},
        "action": "AbortJob",
        "target": dict(target),
    }


def _create(api: Any, name: str) -> int:
    try:
        call(api, api.custom.create_namespaced_custom_object, *CMD[:2], "research", CMD[2],
             _command(name))  # fmt: skip
    except KubeError as exc:
        return exc.status
    return 201


def test_a_stored_fault_keeps_the_write_and_answers_the_status(api, cluster: FakeCluster) -> None:
    cluster.inject("POST", "/commands$", 504, store=True)
    assert _create(api, "a") == 504
    assert [c["metadata"]["name"] for c in cluster.all(*CMD)] == ["a"]
    assert _create(api, "a") == 409  # stored for real: a second create is a duplicate


def test_a_plain_fault_stores_nothing(api, cluster: FakeCluster) -> None:
    cluster.inject("POST", "/commands$", 504)
    assert _create(api, "a") == 504
    assert cluster.all(*CMD) == []


def test_the_hook_runs_at_the_named_request_only(api, cluster: FakeCluster) -> None:
    seen: list[int] = []
    cluster.inject("POST", "/commands$", None)  # the first create passes, untouched
    cluster.inject("POST", "/commands$", 503, before=lambda: seen.append(len(cluster.all(*CMD))))
    assert _create(api, "a") == 201 and seen == []
    assert _create(api, "b") == 503 and seen == [1]
    assert [c["metadata"]["name"] for c in cluster.all(*CMD)] == ["a"]
