"""When a Volcano Command is safe to send, and its shape (reclaimer.kube.objects.volcano). Pure."""

from __future__ import annotations

from typing import Any

import pytest

from reclaimer.kube.objects.volcano import (
    CommandAction,
    command,
    command_name,
    pending_actions,
    refusal,
)

ABORT, RESUME = CommandAction.ABORT, CommandAction.RESUME


def job(
    phase: str | None, retry: int | None = None, max_retry: int | None = None
) -> dict[str, Any]:
    obj: dict[str, Any] = {
        "metadata": {"name": "sim-sweep", "namespace": "research", "uid": "u-1"},
        "spec": {},
        "status": {"state": {"phase": phase} if phase else {}},
    }
    if retry is not None:
        obj["status"]["retryCount"] = retry
    if max_retry is not None:
        obj["spec"]["maxRetry"] = max_retry
    return obj


@pytest.mark.parametrize(
    ("obj", "action", "says"),
    [
        (job("Running"), ABORT, None),
        (job("Pending"), ABORT, None),
        (job(None), ABORT, None),
        (job("Running", retry=1), ABORT, None),
        (job("Running", retry=2), ABORT, "has used 2 of maxRetry 3"),
        (job("Running", retry=2, max_retry=4), ABORT, None),
        (job("Running", max_retry=1), ABORT, "has used 0 of maxRetry 1"),
        (job("Running", retry=5, max_retry=3), ABORT, "has used 5 of maxRetry 3"),
        (job("Restarting"), ABORT, "is Restarting"),
        (job("Aborting"), ABORT, "is Aborting"),
        (job("Aborted"), ABORT, "is Aborted"),
        (job("Completing"), ABORT, "is Completing"),
        (job("Terminating"), ABORT, "is Terminating"),
        (job("Aborted"), RESUME, None),
        (job("Aborting"), RESUME, None),
        (job("Aborted", retry=1), RESUME, None),
        (job("Aborted", retry=2), RESUME, "has used 2 of maxRetry 3"),
        (job("Running"), RESUME, "is Running"),
        (job("Restarting"), RESUME, "is Restarting"),
        (job(None), RESUME, "is Pending"),
    ],
    ids=[
        "abort-running",
        "abort-pending",
        "abort-no-phase-is-pending",
        "abort-one-retry-spent",
        "abort-last-retry-default-max",
        "abort-raised-max",
        "abort-max-retry-1",
        "abort-over-budget",
        "abort-restarting",
        "abort-aborting",
        "abort-aborted",
        "abort-completing",
        "abort-terminating",
        "resume-aborted",
        "resume-aborting",
        "resume-one-retry-spent",
        "resume-last-retry",
        "resume-running",
        "resume-restarting",
        "resume-no-phase",
    ],
)
def test_refusal(obj: dict[str, Any], action: CommandAction, says: str | None) -> None:
    why = refusal(obj, action)
    if says is None:
        assert why is None
    else:
        assert why is not None and says in why


@pytest.mark.parametrize("action", [ABORT, RESUME], ids=["abort", "resume"])
def test_command_shape_follows_vcctl(action: CommandAction) -> None:
    cmd = command(job("Running"), action, "x" * 5000, f"sim-sweep-{action.lower()}-1700000000")
    ref = {
        "apiVersion": "batch.volcano.sh/v1alpha1",
        "kind": "Job",
        "name": "sim-sweep",
        "uid": "u-1",
        "controller": True,
    }
    assert (cmd["apiVersion"], cmd["kind"]) == ("bus.volcano.sh/v1alpha1", "Command")
    assert cmd["action"] == {ABORT: "AbortJob", RESUME: "ResumeJob"}[action]
    assert cmd["target"] == ref
    assert cmd["metadata"] == {
        "name": f"sim-sweep-{cmd['action'].lower()}-1700000000",
        "namespace": "research",
        "ownerReferences": [ref],
    }
    assert cmd["reason"] == "GpuReclaim" and len(cmd["message"]) == 1024


def test_pending_actions_are_those_aimed_at_this_job_by_uid() -> None:
    def cmd(action: object, uid: str, kind: str = "Job") -> dict[str, Any]:
        return {"action": action, "target": {"kind": kind, "name": "sim-sweep", "uid": uid}}

    listed = [
        cmd("AbortJob", "u-1"),
        cmd("ResumeJob", "u-2"),  # the same name, an older job: not this one
        cmd("AbortJob", "u-1", kind="Queue"),  # not a Job: Volcano ignores it
        cmd("RestartJob", "u-1"),  # not an action the reclaimer sends
        {"action": "ResumeJob"},  # no target
    ]
    assert pending_actions(listed, "u-1") == {ABORT}
    assert pending_actions(listed, "") == set()


def test_command_name_is_fixed_by_job_action_and_second() -> None:
    assert command_name("sim-sweep", ABORT, 1796000000.9) == "sim-sweep-abortjob-1796000000"
    assert command_name("sim-sweep", RESUME, 1796000000.0) == "sim-sweep-resumejob-1796000000"
