"""A Kubeflow Trainer v2 TrainJob is one gang: its JobSet, Jobs and pods are the TrainJob's, its
size is its JobSet's (else its trainer's nodes), and its queue is where the trainer puts it."""

from __future__ import annotations

from typing import Any

import pytest

from kube.workload_objects import NS, world
from reclaimer.kube.objects.convert import group_by_kind, to_cluster_view
from reclaimer.model import ClusterView, JobKind

QUEUE = "scheduling.volcano.sh/queue-name"


def _view(objs: list[dict[str, Any]]) -> ClusterView:
    found, notes = group_by_kind(objs)
    assert notes == []
    return to_cluster_view(found, taken_at=0.0)


def _without(objs: list[dict[str, Any]], *kinds: str) -> list[dict[str, Any]]:
    return [o for o in objs if o["kind"] not in kinds]


def test_the_trainjob_is_the_gang_and_its_jobset_is_none() -> None:
    view = _view(world("TrainJob"))
    (job,) = view.jobs
    assert (job.kind, job.key) == (JobKind.TRAIN_JOB, f"{NS}/finetune")
    assert (job.gpus, job.min_member, len(job.pods)) == (2, 2, 2)
    assert {p.job for p in view.pods} == {job.key}
    assert job.queue == "research" and job.controlled_by == "" and job.managed_by == ""


def test_the_jobset_sizes_the_gang_over_the_trainers_spec() -> None:
    objs = world("TrainJob")
    objs[0]["spec"]["trainer"] = {"numNodes": 1}  # the runtime's template decides the rest
    (job,) = _view(objs).jobs
    assert (job.gpus, job.min_member) == (2, 2)


def test_without_its_jobset_the_trainers_spec_sizes_it() -> None:
    objs = world("TrainJob")
    objs[0]["spec"]["trainer"]["resourcesPerNode"] = {"limits": {"nvidia.com/gpu": "4"}}
    (job,) = _view(_without(objs, "JobSet", "Pod")).jobs
    assert (job.gpus, job.min_member) == (8, 2)


@pytest.mark.parametrize(
    ("override", "queue"),
    [
        pytest.param({}, "research", id="the-runtimes-via-the-jobset"),
        pytest.param({"annotations": {QUEUE: "spec-q"}}, "spec-q", id="v2.0-spec-annotations"),
        pytest.param(
            {
                "runtimePatches": [
                    {
                        "manager": "a",
                        "trainingRuntimeSpec": {
                            "template": {"metadata": {"annotations": {QUEUE: "first"}}}
                        },
                    },
                    {"manager": "b", "trainingRuntimeSpec": {"template": {"spec": {}}}},
                    {
                        "manager": "c",
                        "trainingRuntimeSpec": {
                            "template": {"metadata": {"annotations": {QUEUE: "patched"}}}
                        },
                    },
                ]
            },
            "patched",
            id="v2.2-runtime-patches-last-wins",
        ),
    ],
)
def test_the_queue_is_the_trainjobs_override_else_its_jobsets(
    override: dict[str, Any], queue: str
) -> None:
    objs = world("TrainJob")
    objs[0]["spec"].update(override)
    # suspended: no pods, and no PodGroup yet (a PodGroup's queue, which Volcano schedules by,
    # would come first), so the queue comes from the TrainJob or its JobSet
    objs[0]["spec"]["suspend"] = True
    (job,) = _view(_without(objs, "Pod", "PodGroup")).jobs
    assert job.queue == queue and job.suspended


def test_the_podgroups_queue_wins_over_the_annotation() -> None:
    objs = world("TrainJob")
    objs[0]["spec"]["annotations"] = {QUEUE: "spec-q"}
    pg = next(o for o in objs if o["kind"] == "PodGroup")
    (job,) = _view(objs).jobs
    assert job.queue == pg["spec"]["queue"] != "spec-q"


def test_a_suspended_trainjobs_podgroup_is_no_pending_demand() -> None:
    objs = world("TrainJob")
    objs[0]["spec"]["suspend"] = True
    pg = next(o for o in objs if o["kind"] == "PodGroup")
    pg["status"] = {"phase": "Pending"}
    view = _view(_without(objs, "Pod"))
    assert view.pending == ()


def test_a_jobset_left_from_an_earlier_trainjob_of_the_name_does_not_size_it() -> None:
    objs = world("TrainJob")
    objs[0]["metadata"]["uid"] = "uid-tj-new"
    objs[0]["spec"]["trainer"]["resourcesPerNode"] = {"limits": {"nvidia.com/gpu": "3"}}
    (job,) = _view(_without(objs, "Pod")).jobs
    assert job.gpus == 6
