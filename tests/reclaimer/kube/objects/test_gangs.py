"""Jobs another controller admits (Kueue, MultiKueue) are recognised from their objects."""

from __future__ import annotations

from typing import Any

import pytest

from reclaimer.kube.objects.gangs import managed_elsewhere


def _job(labels: dict[str, str] | None = None, managed_by: str | None = None) -> dict[str, Any]:
    policy: dict[str, Any] = {"schedulingPolicy": {"queue": "research"}}
    if managed_by is not None:
        policy["managedBy"] = managed_by
    return {"metadata": {"name": "j", "labels": labels or {}}, "spec": {"runPolicy": policy}}


@pytest.mark.parametrize(
    ("obj", "why"),
    [
        pytest.param(_job(), "", id="plain"),
        pytest.param(_job(managed_by="kubeflow.org/training-operator"), "", id="operator-itself"),
        pytest.param(
            _job({"kueue.x-k8s.io/queue-name": "team-a"}),
            "Kueue admits it (kueue.x-k8s.io/queue-name=team-a): it would unsuspend it at once",
            id="kueue-label",
        ),
        pytest.param(
            _job(managed_by="kueue.x-k8s.io/multikueue"),
            "runPolicy.managedBy is kueue.x-k8s.io/multikueue, not the training-operator",
            id="multikueue",
        ),
    ],
)
def test_managed_elsewhere(obj: dict[str, Any], why: str) -> None:
    assert managed_elsewhere(obj) == why
