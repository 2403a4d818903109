"""Kueue's view, decoded: ClusterQueues as queues, admitted jobs joined to their Workloads,
Workloads without quota as pending demand, in both served versions (v1beta1 and v1beta2)."""

from __future__ import annotations

from typing import Any

import pytest
from kueue_objects import kueue_world, pick, pod

from reclaimer.kube.objects.convert import group_by_kind, to_cluster_view
from reclaimer.model import ClusterView, Job

VERSIONS = ["v1beta1", "v1beta2"]
RECORD = {
    "gpu-reclaim.io/suspended-by": "gpu-reclaimer",
    "gpu-reclaim.io/suspended-at": "2026-11-30T10:00:00Z",
    "gpu-reclaim.io/suspend-reason": "ForecastIdle",
    "gpu-reclaim.io/room-for": "team-b/llm",
}


def _view(objs: list[dict[str, Any]]) -> ClusterView:
    grouped, _ = group_by_kind(objs)
    return to_cluster_view(grouped, taken_at=0.0)


def _job(view: ClusterView, key: str) -> Job:
    return next(j for j in view.jobs if j.key == key)


@pytest.mark.parametrize("version", VERSIONS)
def test_cluster_queues_are_queues_with_their_nominal_quota_guaranteed(version: str) -> None:
    queues = {q.name: q for q in _view(kueue_world(version)).queues}
    assert sorted(queues) == ["prod", "research", "team-b"]
    assert all(q.cluster_queue for q in queues.values())
    got = {
        n: (q.deserved_gpus, q.guarantee_gpus, q.capability_gpus, q.cohort)
        for n, q in queues.items()
    }
    assert got == {
        "research": (2.0, 2.0, None, "gpus"),  # borrows without a limit in its cohort
        "team-b": (2.0, 2.0, None, "gpus"),
        "prod": (2.0, 2.0, 2.0, ""),  # no cohort: it can never hold more than its quota
    }


@pytest.mark.parametrize("version", VERSIONS)
def test_an_admitted_job_is_in_its_cluster_queue_and_stoppable_through_its_workload(
    version: str,
) -> None:
    job = _job(_view(kueue_world(version)), "research/idle")
    assert job.queue == "research" and job.gpus == 2 and len(job.pods) == 2
    assert job.managed_by == ""  # Kueue no longer stands in the way: its Workload is the door
    assert job.kueue is not None
    assert (job.kueue.name, job.kueue.api_version) == (
        "job-idle-1a2b3",
        f"kueue.x-k8s.io/{version}",
    )
    assert job.kueue.active and job.kueue.admitted and not job.suspended


@pytest.mark.parametrize("version", VERSIONS)
def test_a_workload_without_quota_is_pending_demand_of_its_cluster_queue(version: str) -> None:
    view = _view(kueue_world(version))
    [demand] = view.pending
    assert (demand.queue, demand.job, demand.gpus, demand.min_member) == (
        "team-b",
        "team-b/llm",
        2,
        2,
    )
    assert _job(view, "team-b/llm").suspended  # Kueue keeps it suspended until it admits it


def test_a_job_labelled_for_kueue_without_a_workload_is_left_to_kueue() -> None:
    objs = [o for o in kueue_world() if o["kind"] != "Workload"]
    job = _job(_view(objs), "research/idle")
    assert job.kueue is None and job.managed_by.startswith("Kueue admits it")


def test_the_stop_record_is_read_from_the_workload() -> None:
    objs = kueue_world()
    wl = pick(objs, "Workload", "job-idle-1a2b3")
    wl["spec"]["active"] = False
    wl["metadata"]["annotations"] = dict(RECORD)
    job = _job(_view(objs), "research/idle")
    assert job.suspended and job.suspended_by_reclaimer
    assert (job.room_for, job.stop_reason) == ("team-b/llm", "ForecastIdle")
    assert job.stopped_at is not None and job.kueue is not None and not job.kueue.active


def test_a_workload_deactivated_by_someone_else_is_stopped_but_not_by_the_reclaimer() -> None:
    objs = kueue_world()
    pick(objs, "Workload", "job-idle-1a2b3")["spec"]["active"] = False
    # a stale record left on the job itself is not the Workload's: it does not count
    pick(objs, "Job", "idle")["metadata"]["annotations"] = dict(RECORD)
    job = _job(_view(objs), "research/idle")
    assert job.suspended and not job.suspended_by_reclaimer and job.room_for is None


def test_a_deactivated_workload_is_no_demand() -> None:
    objs = kueue_world()
    assert [d.job for d in _view(objs).pending] == ["team-b/llm"]  # while active it waits
    pick(objs, "Workload", "job-llm-1a2b3")["spec"]["active"] = False
    assert _view(objs).pending == ()


def test_a_finished_workload_is_not_joined() -> None:
    objs = kueue_world()
    wl = pick(objs, "Workload", "job-idle-1a2b3")
    wl["status"]["conditions"].append({"type": "Finished", "status": "True"})
    assert _job(_view(objs), "research/idle").kueue is None


def test_a_job_of_a_multikueue_workload_stays_skipped_for_its_manager() -> None:
    objs = kueue_world()
    pick(objs, "Job", "idle")["spec"]["managedBy"] = "kueue.x-k8s.io/multikueue"
    job = _job(_view(objs), "research/idle")
    assert job.kueue is not None and "multikueue reconciles it instead" in job.managed_by


def test_a_cluster_queue_named_like_a_volcano_queue_is_left_out_with_its_jobs() -> None:
    volcano = [
        {
            "apiVersion": "scheduling.volcano.sh/v1beta1",
            "kind": "Queue",
            "metadata": {"name": name},
            "spec": {"reclaimable": False},
        }
        for name in ("prod", "team-b")
    ]
    alone, both = _view(kueue_world()), _view([*kueue_world(), *volcano])
    prod = next(q for q in both.queues if q.name == "prod")
    assert not prod.cluster_queue and not prod.reclaimable
    assert "ClusterQueue prod: skipped, a Volcano Queue has its name" in both.problems
    # under Volcano's name its jobs and Workloads would be judged by Volcano: left to Kueue
    assert _job(alone, "prod/serve").managed_by == ""
    assert _job(both, "prod/serve").managed_by == (
        "Kueue admits it, and its ClusterQueue prod has a Volcano Queue's name"
    )
    assert [d.job for d in alone.pending] == ["team-b/llm"] and both.pending == ()


def _admit_llm(objs: list[dict[str, Any]], bound: int) -> None:
    """Kueue admits `llm` and unsuspends it; its Job made two pods, `bound` of them scheduled."""
    wl = pick(objs, "Workload", "job-llm-1a2b3")
    admitted = pick(objs, "Workload", "job-idle-1a2b3")["status"]
    wl["status"] = {**admitted, "admission": {**admitted["admission"], "clusterQueue": "team-b"}}
    pick(objs, "Job", "llm")["spec"]["suspend"] = False
    for i in range(2):
        p = pod("team-b", "llm", i)
        if i >= bound:
            del p["spec"]["nodeName"]
            p["status"] = {"phase": "Pending"}
        objs.append(p)


def test_an_admitted_workload_waits_for_the_devices_its_pods_are_not_bound_to() -> None:
    waiting = {}
    for bound in (0, 1, 2):
        objs = kueue_world()
        _admit_llm(objs, bound)
        waiting[bound] = [(d.queue, d.job, d.gpus, d.min_member) for d in _view(objs).pending]
    assert waiting == {
        0: [("team-b", "team-b/llm", 2, 2)],
        1: [("team-b", "team-b/llm", 1, 1)],
        2: [],  # all its pods hold their devices: it waits for nothing
    }
