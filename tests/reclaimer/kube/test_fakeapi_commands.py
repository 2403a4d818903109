"""The fake API server refuses a Volcano Command the real one (or Volcano) would not act on.

The valid Command is written here by hand from the `commands.bus.volcano.sh` CRD and what
`vcctl job suspend` sends, not built by the reclaimer's code, so the two can disagree.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

import pytest
from fakeapi import FakeCluster

from reclaimer.kube.client import KubeError, call

NS = "research"
CMD = ("bus.volcano.sh", "v1alpha1", "commands")
TARGET = {
    "apiVersion": "batch.volcano.sh/v1alpha1",
    "kind": "Job",
    "name": "sim-sweep",
    "uid": "33333333-0000-0000-0000-000000000001",
    "controller": True,
}


def valid() -> dict[str, Any]:
    return {
        "apiVersion": "bus.volcano.sh/v1alpha1",
        "kind": "Command",
        "metadata": {"generateName": "sim-sweep-abortjob-", "ownerReferences": [dict(TARGET)]},
        "action": "AbortJob",
        "target": dict(TARGET),
    }


def _create(api: Any, body: dict[str, Any], ns: str = NS) -> tuple[int, str]:
    try:
        call(api, api.custom.create_namespaced_custom_object, *CMD[:2], ns, CMD[2], body)
    except KubeError as exc:
        return exc.status, exc.message
    return 201, ""


def _drop_target(b: dict[str, Any]) -> None:
    del b["target"]


def _drop_target_uid(b: dict[str, Any]) -> None:
    del b["target"]["uid"]


def _target_pod(b: dict[str, Any]) -> None:
    b["target"].update(apiVersion="v1", kind="Pod")


def _target_old_group(b: dict[str, Any]) -> None:
    b["target"]["apiVersion"] = "batch.volcano.sh/v1beta1"


def _suspend_action(b: dict[str, Any]) -> None:
    b["action"] = "SuspendJob"


def _internal_action(b: dict[str, Any]) -> None:
    b["action"] = "SyncJob"


def _no_action(b: dict[str, Any]) -> None:
    del b["action"]


def _action_not_string(b: dict[str, Any]) -> None:
    b["action"] = 1


def _controller_not_bool(b: dict[str, Any]) -> None:
    b["target"]["controller"] = "true"


def _owner_without_uid(b: dict[str, Any]) -> None:
    b["metadata"]["ownerReferences"][0]["uid"] = ""


def _two_controllers(b: dict[str, Any]) -> None:
    b["metadata"]["ownerReferences"].append({**TARGET, "name": "other", "uid": "x"})


def _other_namespace(b: dict[str, Any]) -> None:
    b["metadata"]["namespace"] = "team-a"


def _resume(b: dict[str, Any]) -> None:
    b["action"] = "ResumeJob"


def _no_owner(b: dict[str, Any]) -> None:
    del b["metadata"]["ownerReferences"]


def _queue_command(b: dict[str, Any]) -> None:
    b["target"] = {"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "Queue"}
    b["target"].update(name="research", uid="q-1")
    b["action"] = "CloseQueue"
    del b["metadata"]["ownerReferences"]


@pytest.mark.parametrize(
    ("change", "status", "says"),
    [
        (lambda b: None, 201, ""),
        (_resume, 201, ""),
        (_no_owner, 201, ""),
        (_queue_command, 201, ""),
        (_drop_target, 422, "target: Required value"),
        (_drop_target_uid, 422, "target.uid: Required value"),
        (_target_pod, 422, "target: Unsupported value"),
        (_target_old_group, 422, "target: Unsupported value"),
        (_suspend_action, 422, "action: Unsupported value"),
        (_internal_action, 422, "action: Unsupported value"),
        (_no_action, 422, "action: Unsupported value"),
        (_action_not_string, 422, "action: Invalid value"),
        (_controller_not_bool, 422, "target.controller: Invalid value"),
        (_owner_without_uid, 422, "metadata.ownerReferences[0].uid"),
        (_two_controllers, 422, "Only one reference can have Controller"),
        (_other_namespace, 400, "does not match the namespace"),
    ],
    ids=[
        "valid-abort",
        "valid-resume",
        "valid-without-owner",
        "valid-queue-command",
        "no-target",
        "target-without-uid",
        "target-a-pod",
        "target-wrong-version",
        "unknown-action",
        "internal-action",
        "no-action",
        "action-not-string",
        "controller-not-bool",
        "owner-without-uid",
        "two-controllers",
        "namespace-mismatch",
    ],
)
def test_command_validation(
    api: Any,
    cluster: FakeCluster,
    change: Callable[[dict[str, Any]], None],
    status: int,
    says: str,
) -> None:
    body = copy.deepcopy(valid())
    change(body)
    got, message = _create(api, body)
    assert got == status, message
    assert says in message
    stored = cluster.all(*CMD)
    assert len(stored) == (1 if status == 201 else 0)
    if stored:
        assert stored[0]["metadata"]["namespace"] == NS
        assert stored[0]["metadata"]["name"].startswith(body["metadata"]["generateName"])
