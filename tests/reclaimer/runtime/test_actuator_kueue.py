"""The actuator on a Kueue cluster (fake API server, with Kueue's controllers played by
`fakeapi.kueue`): a job Kueue admits is stopped and resumed only through its Workload's
`spec.active`, with the stop record on the Workload and the Event on the job."""

from __future__ import annotations

from typing import Any

import pytest
from fakeapi import FakeCluster
from kube.plan_fixture import NOW, POD, events_for, forecast, resume, run
from kueue_objects import kueue_world

from reclaimer.decisions import Action, ActionKind, Evidence, Outcome, Reason
from reclaimer.kube.objects import resources as r
from reclaimer.kube.read import read_cluster_sync
from reclaimer.runtime.actuator import Actuator

JOBS = ("batch", "v1", "jobs")
IDLE_WL = "job-idle-1a2b3"
LATER = NOW + 7200.0  # past the job cool-down after a stop at NOW


def _wl_res(version: str) -> tuple[str, str, str]:
    return ("kueue.x-k8s.io", version, "workloads")


@pytest.fixture(params=["v1beta2", "v1beta1"])
def cluster(request: pytest.FixtureRequest) -> FakeCluster:
    c = FakeCluster(kueue_versions=frozenset({request.param}))
    c.add(*kueue_world(request.param))
    return c


def _version(cluster: FakeCluster) -> str:
    [version] = cluster.kueue_versions
    return version


def _preempt(target: str = "research/idle") -> Action:
    ev = Evidence(forecast=forecast(target), for_pending="team-b/llm", gpus_freed=2)
    return Action(ActionKind.PREEMPT, target, Reason.IDLE_FOR_STARVED_QUEUE, ev)


def _wl(cluster: FakeCluster, name: str = IDLE_WL, ns: str = "research") -> dict[str, Any]:
    found = cluster.get(*_wl_res(_version(cluster)), name, ns)
    assert found is not None
    return found


def _conditions(obj: dict[str, Any]) -> dict[str, str]:
    return {c["type"]: c["status"] for c in obj["status"].get("conditions", [])}


def test_an_idle_kueue_job_is_stopped_by_deactivating_its_workload(
    api: Any, cluster: FakeCluster
) -> None:
    [res] = run(api, [_preempt()])
    assert res.outcome is Outcome.APPLIED, res
    patches = [w for w in cluster.writes() if w.method == "PATCH"]
    assert [w.path for w in patches] == [
        f"/apis/kueue.x-k8s.io/{_version(cluster)}/namespaces/research/workloads/{IDLE_WL}"
    ]  # the job's own suspend is Kueue's to write, never ours
    [patch] = patches
    assert patch.body["spec"] == {"active": False} and "resourceVersion" in patch.body["metadata"]
    wl = _wl(cluster)
    notes = wl["metadata"]["annotations"]
    assert notes[r.SUSPENDED_BY] == "gpu-reclaimer" and notes[r.ROOM_FOR] == "team-b/llm"
    # Kueue's answer: evicted, the job suspended, its pods deleted, its quota released and
    # handed to the Workload that waited for it
    assert _conditions(wl)["Evicted"] == "True" and _conditions(wl)["QuotaReserved"] == "False"
    assert cluster.get(*JOBS, "idle", "research")["spec"]["suspend"] is True
    assert all(
        p["metadata"].get("deletionTimestamp")
        for p in cluster.all(*POD)
        if p["metadata"]["name"].startswith("idle-")
    )
    assert _conditions(_wl(cluster, "job-llm-1a2b3", "team-b"))["QuotaReserved"] == "True"
    [event] = events_for(cluster, "idle")
    assert event["reason"] == "GpuReclaimPreempted" and event["involvedObject"]["kind"] == "Job"
    assert res.detail == f"Workload {IDLE_WL} spec.active=false"


def test_dry_run_sends_the_deactivation_and_changes_nothing(api: Any, cluster: FakeCluster) -> None:
    [res] = run(api, [_preempt()], dry_run=True)
    assert res.outcome is Outcome.DRY_RUN, res
    [patch] = [w for w in cluster.writes() if w.method == "PATCH"]
    assert patch.dry_run and patch.body["spec"] == {"active": False}
    assert _wl(cluster)["spec"]["active"] is True
    assert cluster.get(*JOBS, "idle", "research")["spec"]["suspend"] is False


def test_a_stopped_kueue_job_is_resumed_by_reactivating_its_workload(
    api: Any, cluster: FakeCluster
) -> None:
    run(api, [_preempt()])
    cluster.finish_termination()
    [res] = run(api, [resume("research/idle")], now=LATER)
    assert res.outcome is Outcome.APPLIED, res
    wl = _wl(cluster)
    notes = wl["metadata"].get("annotations") or {}
    assert wl["spec"]["active"] is True and r.SUSPENDED_BY not in notes and r.RESUMED_AT in notes
    assert _conditions(wl)["Requeued"] == "True"  # Kueue requeued it; quota decides the rest


def test_a_workload_someone_else_deactivated_is_never_reactivated(
    api: Any, cluster: FakeCluster
) -> None:
    with cluster.lock:  # the snapshot sees a stop of the reclaimer's
        wl = _wl(cluster)
        wl["spec"]["active"] = False
        wl["metadata"]["annotations"] = {r.SUSPENDED_BY: "gpu-reclaimer"}
    view = read_cluster_sync(api, now=LATER)
    with cluster.lock:  # by the resume, the deactivation is someone else's
        _wl(cluster)["metadata"]["annotations"] = {}
    act = Actuator(api, clock=lambda: LATER, dry_run=False)
    [res] = act.apply([resume("research/idle")], view)
    assert res.outcome is Outcome.SKIPPED and "not deactivated by the reclaimer" in res.detail
    assert not [w for w in cluster.writes() if w.method == "PATCH"]


def test_a_workload_that_lost_its_quota_is_not_deactivated(api: Any, cluster: FakeCluster) -> None:
    view = read_cluster_sync(api, now=NOW)
    with cluster.lock:  # Kueue evicted it between the snapshot and the stop
        wl = _wl(cluster)
        wl["status"]["conditions"] = [{"type": "QuotaReserved", "status": "False"}]
    [res] = Actuator(api, clock=lambda: NOW, dry_run=False).apply([_preempt()], view)
    assert res.outcome is Outcome.SKIPPED and "holds no quota" in res.detail
    assert not [w for w in cluster.writes() if w.method == "PATCH"]
