"""The actuator's warnings before a stop, against the fake API server: the record written with
the stop time counted from the write, never a second countdown on a warned job, dry-run stores
nothing, a cancel removes the record, and a keep's Event once per keep, Warning when capped."""

from __future__ import annotations

from dataclasses import replace

from fakeapi import FakeCluster
from kube.plan_fixture import NOW, PYT, events_for, forecast, run

from reclaimer.decisions import Action, ActionKind, Evidence, Outcome, Reason, Skip
from reclaimer.kube.objects import resources as r
from reclaimer.kube.read import read_cluster_sync
from reclaimer.runtime.actuator import Actuator

TARGET = "research/bert-train"


def _warn(seconds: float = 600.0) -> Action:
    ev = Evidence(
        forecast=forecast(TARGET),
        for_pending="prod/llm-finetune",
        detail="idle",
        stop_at=NOW - 30 + seconds,  # planned a little earlier than written
        warn_seconds=seconds,
    )
    return Action(ActionKind.WARN, TARGET, Reason.IDLE_FOR_STARVED_QUEUE, ev)


def _notes(cluster: FakeCluster) -> dict[str, str]:
    job = cluster.get(*PYT, "bert-train", "research")
    assert job is not None
    return dict(job["metadata"].get("annotations") or {})


def test_a_warning_records_its_stop_counted_from_the_write_and_warns_the_owner(
    api, cluster: FakeCluster
) -> None:
    [res] = run(api, [_warn()])
    assert res.outcome is Outcome.APPLIED, res
    notes = _notes(cluster)
    assert notes[r.RECLAIM_AFTER] == "2026-11-30T01:03:20Z"  # NOW + 10m, not the plan's time
    assert notes[r.WARNED_AT] == "2026-11-30T00:53:20Z"
    assert notes[r.WARNED_FOR] == "prod/llm-finetune"
    assert not cluster.get(*PYT, "bert-train", "research")["spec"]["runPolicy"].get("suspend")
    [event] = events_for(cluster, "bert-train")
    assert event["reason"] == "GpuReclaimScheduled" and event["type"] == "Warning"
    assert "stop at 2026-11-30T01:03:20Z" in event["message"]


def test_a_warned_job_is_never_given_a_second_countdown(api, cluster: FakeCluster) -> None:
    run(api, [_warn()])
    [again] = run(api, [_warn()], now=NOW + 60)
    assert again.outcome is Outcome.SKIPPED and "already warned" in again.detail
    assert _notes(cluster)[r.RECLAIM_AFTER] == "2026-11-30T01:03:20Z"
    assert len(events_for(cluster, "bert-train")) == 1


def test_dry_run_stores_no_warning(api, cluster: FakeCluster) -> None:
    [res] = run(api, [_warn()], dry_run=True)
    assert res.outcome is Outcome.DRY_RUN and res.writes == 2  # the patch and the Event
    assert r.RECLAIM_AFTER not in _notes(cluster)


def test_a_cancel_removes_the_record_with_an_event(api, cluster: FakeCluster) -> None:
    run(api, [_warn()])
    cancel = Action(ActionKind.CANCEL, TARGET, Reason.BUSY_AGAIN, Evidence(detail="busy now"))
    [res] = run(api, [cancel], now=NOW + 60)
    assert res.outcome is Outcome.APPLIED, res
    assert not any(k in _notes(cluster) for k in r.WARNING_RECORD)
    reasons = [(e["reason"], e["type"]) for e in events_for(cluster, "bert-train")]
    assert reasons == [("GpuReclaimScheduled", "Warning"), ("GpuReclaimCancelled", "Normal")]


def test_a_keep_is_told_once_per_keep_and_a_capped_one_as_a_warning(
    api, cluster: FakeCluster
) -> None:
    view = read_cluster_sync(api, now=NOW)
    job = next(j for j in view.jobs if j.key == TARGET)
    view = replace(view, jobs=(replace(job, keep_until=NOW + 7200),))
    capped = Skip(TARGET, Reason.KEEP_CAPPED, "keep-until capped at ...")
    first = Actuator(api, clock=lambda: NOW, dry_run=False)
    assert first.warn([capped], view) == 1
    assert first.warn([capped], view) == 0  # this process wrote it
    assert Actuator(api, clock=lambda: NOW, dry_run=False).warn([capped], view) == 0  # 409
    [event] = events_for(cluster, "bert-train")
    assert event["reason"] == "GpuReclaimKept" and event["type"] == "Warning"
