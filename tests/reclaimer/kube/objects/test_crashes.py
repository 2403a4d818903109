"""Container crashes of GPU pods, decoded from pod status as the kubelet writes it (k8s.io/api
core/v1 types.go: `ContainerStatus{name, state, lastState, restartCount}`, a terminated state
`ContainerStateTerminated{exitCode, reason, startedAt, finishedAt}`)."""

from __future__ import annotations

from typing import Any

import pytest

from reclaimer.kube.objects.convert import ClusterObjects, to_cluster_view
from reclaimer.kube.objects.crashes import pod_crashes
from reclaimer.model import ContainerCrash

AT = "2026-11-30T00:40:00Z"
AT_S = 1_795_999_200.0


def _ended(reason: str, code: int, at: str = AT) -> dict[str, Any]:
    return {"terminated": {"exitCode": code, "reason": reason, "finishedAt": at}}


def _pod(
    *statuses: dict[str, Any], node: str | None = "n1", gpus: str = "1", **meta: Any
) -> dict[str, Any]:
    limits = {"nvidia.com/gpu": gpus} if gpus else {}
    spec: dict[str, Any] = {"containers": [{"name": "main", "resources": {"limits": limits}}]}
    if node:
        spec["nodeName"] = node
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "p", "namespace": "ns", **meta},
        "spec": spec,
        "status": {"phase": "Running", "containerStatuses": list(statuses)},
    }


def _status(restarts: int = 2, **states: dict[str, Any]) -> dict[str, Any]:
    return {"name": "main", "restartCount": restarts, "ready": False, **states}


def _crash(reason: str, code: int) -> ContainerCrash:
    return ContainerCrash("ns/p", "n1", "main", AT_S, reason, code, 2)


CASES = [
    pytest.param(
        _pod(_status(lastState=_ended("OOMKilled", 137), state={"running": {}})),
        [_crash("OOMKilled", 137)],
        id="oom-killed-then-restarted",
    ),
    pytest.param(
        _pod(_status(state=_ended("Error", 1))),
        [_crash("Error", 1)],
        id="a-cuda-oom-exits-with-error-not-restarted-yet",
    ),
    pytest.param(
        _pod(_status(state=_ended("Error", 1), lastState=_ended("OOMKilled", 137))),
        [_crash("Error", 1), _crash("OOMKilled", 137)],
        id="the-end-now-and-the-one-before",
    ),
    pytest.param(_pod(_status(lastState=_ended("Completed", 0))), [], id="a-clean-exit"),
    pytest.param(_pod(_status(lastState=_ended("OOMKilled", 137)), node=None), [], id="unbound"),
    pytest.param(_pod(_status(lastState=_ended("Error", 1)), gpus=""), [], id="no-gpu"),
    pytest.param(
        _pod(_status(state=_ended("Error", 143)), deletionTimestamp=AT),
        [],
        id="killed-on-its-way-out",
    ),
    pytest.param(_pod(_status(state={"waiting": {"reason": "CrashLoopBackOff"}})), [], id="none"),
]


@pytest.mark.parametrize(("pod", "crashes"), CASES)
def test_crashes_from_pod_status(pod: dict[str, Any], crashes: list[ContainerCrash]) -> None:
    assert pod_crashes(pod) == crashes


def test_the_view_carries_them_and_a_malformed_status_is_a_problem_not_a_failure() -> None:
    good = _pod(_status(lastState=_ended("OOMKilled", 137)))
    bad = _pod(_status(lastState=_ended("OOMKilled", 137, at="yesterday")), name="q")
    view = to_cluster_view(ClusterObjects(pods=[good, bad]), taken_at=AT_S + 60)
    assert view.crashes == (_crash("OOMKilled", 137),)
    assert any(p.startswith("Pod ns/q status: skipped") for p in view.problems), view.problems
    assert {p.key for p in view.pods} == {"ns/p", "ns/q"}  # the pod itself is read as ever
