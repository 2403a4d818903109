"""Workloads another controller admits, reconciles or owns are recognised from their objects:
Kueue's label, each kind's `managedBy` field against its own controller's name, and a
controller owner of a kind the reclaimer does not manage."""

from __future__ import annotations

from typing import Any

import pytest

from kube.workload_objects import WORLDS, meta, owner
from reclaimer.kube.objects.convert import group_by_kind, to_cluster_view
from reclaimer.kube.objects.management import foreign_owner, managed_elsewhere

PYTORCH = ("kubeflow.org/v1", "PyTorchJob")


def _job(
    labels: dict[str, str] | None = None,
    managed_by: str | None = None,
    kind: tuple[str, str] = PYTORCH,
) -> dict[str, Any]:
    spec: dict[str, Any] = {}
    if kind in (PYTORCH, ("kubeflow.org/v2beta1", "MPIJob")):
        spec["runPolicy"] = {"schedulingPolicy": {"queue": "research"}}
        if managed_by is not None:
            spec["runPolicy"]["managedBy"] = managed_by
    elif managed_by is not None:
        spec["managedBy"] = managed_by
    return {
        "apiVersion": kind[0],
        "kind": kind[1],
        "metadata": {"name": "j", "labels": labels or {}},
        "spec": spec,
    }


JOBSET = ("jobset.x-k8s.io/v1alpha2", "JobSet")
BATCH = ("batch/v1", "Job")
TRAINJOB = ("trainer.kubeflow.org/v1alpha1", "TrainJob")


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
            "runPolicy.managedBy is kueue.x-k8s.io/multikueue, not kubeflow.org/training-operator"
            " (the PyTorchJob controller): kueue.x-k8s.io/multikueue reconciles it instead",
            id="multikueue",
        ),
        pytest.param(
            _job(managed_by="kubeflow.org/mpi-operator", kind=("kubeflow.org/v2beta1", "MPIJob")),
            "",
            id="mpijob-by-the-mpi-operator",
        ),
        pytest.param(_job(managed_by="jobset.sigs.k8s.io/jobset-controller", kind=JOBSET), ""),
        pytest.param(
            _job(managed_by="example.com/pipelines", kind=JOBSET),
            "managedBy is example.com/pipelines, not jobset.sigs.k8s.io/jobset-controller (the "
            "JobSet controller): example.com/pipelines reconciles it instead",
            id="jobset-managed-by-another",
        ),
        pytest.param(_job(managed_by="kubernetes.io/job-controller", kind=BATCH), ""),
        pytest.param(
            _job(managed_by="kueue.x-k8s.io/multikueue", kind=BATCH),
            "managedBy is kueue.x-k8s.io/multikueue, not kubernetes.io/job-controller (the Job "
            "controller): kueue.x-k8s.io/multikueue reconciles it instead",
            id="batch-job-managed-by-multikueue",
        ),
        pytest.param(
            _job(managed_by="trainer.kubeflow.org/trainjob-controller", kind=TRAINJOB), ""
        ),
        pytest.param(
            _job(managed_by="kueue.x-k8s.io/multikueue", kind=TRAINJOB),
            "managedBy is kueue.x-k8s.io/multikueue, not trainer.kubeflow.org/trainjob-controller "
            "(the TrainJob controller): kueue.x-k8s.io/multikueue reconciles it instead",
            id="trainjob-managed-by-multikueue",
        ),
    ],
)
def test_managed_elsewhere(obj: dict[str, Any], why: str) -> None:
    assert managed_elsewhere(obj) == why


def test_a_known_kind_under_an_unknown_owner_is_named_and_skipped_whole() -> None:
    pipeline = meta("Pipeline", "example.com/v1", "nightly", "uid-pipe")
    objs = WORLDS["JobSet"]()
    top, rest = objs
    top["metadata"]["ownerReferences"] = [owner(pipeline)]
    why = foreign_owner(top)
    assert why.startswith("its controller owner is Pipeline team/nightly (example.com/v1)")
    view = to_cluster_view(group_by_kind([top, *rest])[0], taken_at=0.0)
    (job,) = view.jobs
    assert job.key == "team/pretrain" and job.controlled_by == why
    assert len(job.pods) == 2  # its pods are its gang's, and the gang is left alone whole


@pytest.mark.parametrize(
    "parent",
    [
        pytest.param(None, id="no-owner"),
        pytest.param(meta("CronJob", "batch/v1", "nightly", "uid-cron"), id="cronjob"),
        pytest.param(meta("TrainJob", "trainer.kubeflow.org/v1alpha1", "t", "u"), id="managed"),
    ],
)
def test_no_owner_or_a_hands_off_or_managed_owner_is_no_reason(parent: Any) -> None:
    job = _job(kind=BATCH)
    if parent is not None:
        job["metadata"]["ownerReferences"] = [owner(parent)]
    assert foreign_owner(job) == ""
