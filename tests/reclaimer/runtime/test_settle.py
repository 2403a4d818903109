"""Settling earlier stops against the fake API server (the real client over HTTP): a record
whose stop never happened, a stop whose Event is missing, an eviction cut short.

The processes-and-kills versions are tests/reclaimer/e2e/test_interrupted_stops.py; these pin
the re-checks between the snapshot and the write, which a kill cannot time.
"""

from __future__ import annotations

from typing import Any

from fakeapi import FakeCluster
from kube.plan_fixture import NOW, POD, VCJ, events_for, preempt

from reclaimer.decisions import Outcome
from reclaimer.kube.objects import resources as r
from reclaimer.kube.read import read_cluster_sync
from reclaimer.runtime.actuator import Actuator

RECORD = {
    r.SUSPENDED_BY: "gpu-reclaimer",
    r.SUSPENDED_AT: "2026-11-30T00:40:00Z",
    r.SUSPEND_REASON: "IdleJobForStarvedQueue",
    r.ROOM_FOR: "prod/llm-finetune",
}


def actuator(api: Any) -> Actuator:
    return Actuator(api, clock=lambda: NOW, dry_run=False)


def _notes(cluster: FakeCluster, res: tuple[str, str, str], name: str, ns: str) -> dict[str, str]:
    obj = cluster.get(*res, name, ns)
    assert obj is not None
    return dict(obj["metadata"].get("annotations") or {})


def _half_stopped(cluster: FakeCluster) -> None:
    """sim-sweep carries a stop record, but no AbortJob Command was created: still Running."""
    cluster.get(*VCJ, "sim-sweep", "research")["metadata"]["annotations"] = dict(RECORD)


def test_a_record_without_its_command_is_not_a_stop_and_is_cleared(
    api: Any, cluster: FakeCluster
) -> None:
    _half_stopped(cluster)
    view = read_cluster_sync(api, now=NOW)
    job = next(j for j in view.jobs if j.key == "research/sim-sweep")
    assert not job.suspended and not job.suspended_by_reclaimer and job.room_for is None
    assert "no AbortJob Command" in job.unfinished_stop
    assert "research/sim-sweep" not in view.last_actions  # no cool-down from a stop not made
    [done] = actuator(api).settle(view, [])
    assert done.startswith("stop record of research/sim-sweep cleared")
    assert not set(RECORD) & set(_notes(cluster, VCJ, "sim-sweep", "research"))
    [event] = events_for(cluster, "sim-sweep")
    assert (event["reason"], event["type"]) == ("GpuReclaimStopCleared", "Warning")


def test_a_stop_carried_out_after_the_snapshot_keeps_its_record(
    api: Any, cluster: FakeCluster
) -> None:
    """Volcano took the Command up between the snapshot and the settling: re-read, it is kept."""
    _half_stopped(cluster)
    view = read_cluster_sync(api, now=NOW)
    cluster.get(*VCJ, "sim-sweep", "research")["status"]["state"]["phase"] = "Aborting"
    assert actuator(api).settle(view, []) == []
    assert _notes(cluster, VCJ, "sim-sweep", "research")[r.ROOM_FOR] == "prod/llm-finetune"
    assert [w for w in cluster.writes()] == []


def test_a_job_this_cycle_wrote_to_is_left_for_the_next_snapshot(
    api: Any, cluster: FakeCluster
) -> None:
    _half_stopped(cluster)
    view = read_cluster_sync(api, now=NOW)
    act = actuator(api)
    cluster.inject("POST", "/commands$", 504)  # not stored: unknown whether Volcano took it
    results = act.apply([preempt("research/sim-sweep")], view)
    assert results[0].outcome is Outcome.FAILED and results[0].writes > 0
    assert act.settle(view, results) == []
    assert r.SUSPENDED_BY in _notes(cluster, VCJ, "sim-sweep", "research")


def _probe_passes(cluster: FakeCluster) -> None:
    pdb = cluster.get("policy", "v1", "poddisruptionbudgets", "notebook-pdb", "team-a")
    pdb["spec"]["minAvailable"] = 0
    cluster.inject("POST", "/eviction$", None)  # the dry-run probe goes through


def test_an_eviction_refused_after_the_record_rolls_the_record_back(
    api: Any, cluster: FakeCluster
) -> None:
    _probe_passes(cluster)
    cluster.inject("POST", "/eviction$", 429)
    view = read_cluster_sync(api, now=NOW)
    [res] = actuator(api).apply([preempt("team-a/notebook-0")], view)
    assert (res.outcome, res.http_status) == (Outcome.SKIPPED, 429)
    assert r.EVICTED_AT not in _notes(cluster, POD, "notebook-0", "team-a")


def test_an_eviction_answered_504_keeps_the_record_until_the_snapshot_tells(
    api: Any, cluster: FakeCluster
) -> None:
    _probe_passes(cluster)
    cluster.inject("POST", "/eviction$", 504)  # not carried out, but the answer cannot say so
    view = read_cluster_sync(api, now=NOW)
    [res] = actuator(api).apply([preempt("team-a/notebook-0")], view)
    assert (res.outcome, res.http_status) == (Outcome.FAILED, 504)
    assert res.detail.startswith("not confirmed: ")
    assert _notes(cluster, POD, "notebook-0", "team-a")[r.ROOM_FOR] == "prod/llm-finetune"
    later = read_cluster_sync(api, now=NOW + 60)  # the next cycle: the pod is not terminating
    [job] = [j for j in later.jobs if j.key == "team-a/notebook-0"]
    assert job.unfinished_stop and job.room_for is None
    [done] = actuator(api).settle(later, [])
    assert "team-a/notebook-0 cleared" in done
    assert r.EVICTED_AT not in _notes(cluster, POD, "notebook-0", "team-a")


def test_the_event_of_an_eviction_found_terminating_is_written_once(
    api: Any, cluster: FakeCluster
) -> None:
    pod = cluster.get(*POD, "notebook-0", "team-a")
    pod["metadata"]["annotations"] = {r.EVICTED_AT: "2026-11-30T00:50:00Z", r.ROOM_FOR: "a/b"}
    pod["metadata"]["deletionTimestamp"] = "2026-11-30T00:50:30Z"  # evicted, still terminating
    view = read_cluster_sync(api, now=NOW)
    act = actuator(api)
    [done] = act.settle(view, [])
    assert done == "recorded the Event of the stop of team-a/notebook-0, found without one"
    [event] = events_for(cluster, "notebook-0")
    assert event["metadata"]["name"] == f"notebook-0.gpu-reclaim-{1795999800:x}"
    assert event["involvedObject"]["kind"] == "Pod" and "for pending a/b" in event["message"]
    assert act.settle(view, []) == []  # known written: not even asked again
    assert actuator(api).settle(view, []) == []  # a new process: the create answers 409
    assert len(events_for(cluster, "notebook-0")) == 1
