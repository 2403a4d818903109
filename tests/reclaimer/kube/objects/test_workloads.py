"""Every suspendable kind becomes one gang holding all its pods, resolved through its owners."""

from __future__ import annotations

import pytest

from kube.workload_objects import NAMES, NS, WORLDS, meta, owner, pod, world
from reclaimer.kube.objects.convert import group_by_kind, to_cluster_view
from reclaimer.kube.objects.owners import OwnerIndex
from reclaimer.model import JobKind


@pytest.mark.parametrize("kind", sorted(WORLDS))
def test_each_kind_is_one_gang_of_all_its_pods(kind: str) -> None:
    objs, notes = group_by_kind(world(kind))
    assert notes == []
    view = to_cluster_view(objs, taken_at=0.0)
    (job,) = view.jobs
    assert job.kind is JobKind(kind)
    assert job.key == f"{NS}/{NAMES[kind]}"
    assert job.gpus == 2 and len(job.pods) == 2 - (kind == "Notebook")
    assert job.queue == "research"  # the spec's, or its pods' when the spec names none
    assert {p.job for p in view.pods} == {job.key}
    assert not job.suspended and view.unmanaged == {}


@pytest.mark.parametrize(
    ("kind", "stop"),
    [
        ("PyTorchJob", lambda o: o["spec"]["runPolicy"].update(suspend=True)),
        ("MPIJob", lambda o: o["spec"]["runPolicy"].update(suspend=True)),
        ("BatchJob", lambda o: o["spec"].update(suspend=True)),
        ("JobSet", lambda o: o["spec"].update(suspend=True)),
        ("RayJob", lambda o: o["spec"].update(suspend=True)),
        ("TrainJob", lambda o: o["spec"].update(suspend=True)),
        (
            "Notebook",
            lambda o: o["metadata"].update(
                annotations={"kubeflow-resource-stopped": "2026-11-30T00:00:00Z"}
            ),
        ),
    ],
)
def test_each_kind_reads_its_own_stop(kind: str, stop) -> None:
    objs = world(kind)
    stop(objs[0])
    view = to_cluster_view(group_by_kind(objs)[0], taken_at=0.0)
    assert view.jobs[0].suspended


@pytest.mark.parametrize(
    ("kind", "finish"),
    [
        ("TFJob", {"conditions": [{"type": "Succeeded", "status": "True"}]}),
        ("BatchJob", {"conditions": [{"type": "Complete", "status": "True"}]}),
        ("JobSet", {"conditions": [{"type": "Completed", "status": "True"}]}),
        ("RayJob", {"jobDeploymentStatus": "Complete"}),
        ("TrainJob", {"conditions": [{"type": "Complete", "status": "True"}]}),
    ],
)
def test_a_finished_workload_is_no_gang(kind: str, finish: dict) -> None:
    objs = world(kind)
    objs[0]["status"] = finish
    view = to_cluster_view(group_by_kind(objs)[0], taken_at=0.0)
    assert view.jobs == ()
    assert all("finished or could not be read" in why for why in view.unmanaged.values())


def test_an_unknown_controller_is_named() -> None:
    rs = meta("ReplicaSet", "apps/v1", "serve-abc", "uid-rs")
    rs.pop("kind")
    rs["kind"] = "ReplicaSet"
    cr = meta("Trainer", "example.com/v1", "t", "uid-cr")
    objs = [pod("serve-abc-1", rs), pod("t-0", cr)]
    view = to_cluster_view(group_by_kind(objs)[0], taken_at=0.0)
    assert view.jobs == ()
    assert set(view.unmanaged) == {f"{NS}/serve-abc-1", f"{NS}/t-0"}
    assert "run by ReplicaSet (apps/v1)" in view.unmanaged[f"{NS}/serve-abc-1"]
    assert "run by Trainer (example.com/v1)" in view.unmanaged[f"{NS}/t-0"]


def test_a_statefulset_under_an_unknown_owner_names_that_owner() -> None:
    app = meta("InferenceService", "serving.example.com/v1", "llm", "uid-isvc")
    sts = meta("StatefulSet", "apps/v1", "llm-predictor", "uid-sts", ownerReferences=[owner(app)])
    view = to_cluster_view(group_by_kind([sts, pod("llm-predictor-0", sts)])[0], taken_at=0.0)
    assert view.jobs == ()
    why = view.unmanaged[f"{NS}/llm-predictor-0"]
    assert why.startswith(
        f"run by StatefulSet (apps/v1) owned by InferenceService {NS}/llm "
        "(serving.example.com/v1): not a kind the reclaimer can stop"
    )


def test_a_known_workload_under_a_cronjob_is_its_own_gang() -> None:
    cron = meta("CronJob", "batch/v1", "nightly", "uid-cron")
    job, pods = WORLDS["BatchJob"]()
    job["metadata"]["ownerReferences"] = [owner(cron)]
    index = OwnerIndex([job, cron])
    found = index.resolve(pods[0])
    assert found.key == f"{NS}/sweep" and found.kind is not None
    assert found.kind.job_kind is JobKind.BATCH_JOB


def test_an_owner_cycle_does_not_loop() -> None:
    a = meta("StatefulSet", "apps/v1", "a", "uid-a")
    b = meta("StatefulSet", "apps/v1", "b", "uid-b", ownerReferences=[owner(a)])
    a["metadata"]["ownerReferences"] = [owner(b)]
    found = OwnerIndex([a, b]).resolve(pod("p", a))
    assert found.key is None and found.other.startswith("StatefulSet")
