"""The actuator against the fake API server: every action kind, dry-run, failures, limits."""

from __future__ import annotations

import copy
from typing import Any

import pytest
from fakeapi import NEVER_S, FakeCluster
from kube.plan_fixture import (
    CMD,
    NOW,
    POD,
    PYT,
    VCJ,
    events_for,
    preempt,
    reshape,
    resume,
    run,
)

from reclaimer.decisions import Action, Outcome, Reason
from reclaimer.kube.objects import resources as r
from reclaimer.kube.read import read_cluster_sync
from reclaimer.policy.settings import Actions, Limits, Policy
from reclaimer.runtime.actuator import Actuator


def test_preempt_pytorchjob_suspends_annotates_and_records(api, cluster: FakeCluster) -> None:
    [res] = run(api, [preempt("research/bert-train")])
    assert res.outcome is Outcome.APPLIED, res
    job = cluster.get(*PYT, "bert-train", "research")
    assert job["spec"]["runPolicy"]["suspend"] is True
    ann = job["metadata"]["annotations"]
    assert (
        ann[r.SUSPENDED_BY] == "gpu-reclaimer" and ann[r.SUSPEND_REASON] == "IdleJobForStarvedQueue"
    )
    assert ann[r.SUSPENDED_AT] == "2026-11-30T00:53:20Z"
    [event] = events_for(cluster, "bert-train")
    assert (
        event["reason"] == "GpuReclaimPreempted" and event["involvedObject"]["kind"] == "PyTorchJob"
    )
    assert "p_idle=0.97 (test; " in event["message"] and "prod/llm-finetune" in event["message"]
    [patch] = [q for q in cluster.requests if q.method == "PATCH"]
    assert patch.content_type == "application/merge-patch+json"
    assert "resourceVersion" in patch.body["metadata"]  # optimistic concurrency


def test_preempt_volcano_job_creates_abort_command(api, cluster: FakeCluster) -> None:
    [res] = run(api, [preempt("research/sim-sweep")])
    assert res.outcome is Outcome.APPLIED, res
    [cmd] = cluster.all(*CMD)
    assert cmd["action"] == "AbortJob"
    assert cmd["metadata"]["namespace"] == "research"
    assert cmd["metadata"]["name"].startswith("sim-sweep-abortjob-")
    target = {k: cmd["target"][k] for k in ("apiVersion", "kind", "name", "uid")}
    assert target == {
        "apiVersion": "batch.volcano.sh/v1alpha1",
        "kind": "Job",
        "name": "sim-sweep",
        "uid": "33333333-0000-0000-0000-000000000001",
    }
    assert cmd["metadata"]["ownerReferences"] == [cmd["target"]]
    assert cmd["target"]["controller"] is True
    assert "blockOwnerDeletion" not in cmd["target"]  # would need update on jobs/finalizers
    job = cluster.get(*VCJ, "sim-sweep", "research")
    assert job["metadata"]["annotations"][r.SUSPENDED_BY] == "gpu-reclaimer"
    assert events_for(cluster, "sim-sweep")


def test_volcano_command_refused_rolls_back_the_record(api, cluster: FakeCluster) -> None:
    cluster.inject("POST", "/commands$", 422)
    [res] = run(api, [preempt("research/sim-sweep")])
    assert res.outcome is Outcome.FAILED and res.http_status == 422
    job = cluster.get(*VCJ, "sim-sweep", "research")
    assert r.SUSPENDED_BY not in (job["metadata"].get("annotations") or {})


@pytest.mark.parametrize("stored", [True, False], ids=["stored", "not-stored"])
def test_volcano_command_answered_504_is_read_back(api, cluster: FakeCluster, stored: bool) -> None:
    """A 504 may come after the Command was stored: read back, it is a stop made; not found
    (Volcano may have taken it up already), the record stays for the next snapshot to judge."""
    cluster.inject("POST", "/commands$", 504, store=stored)
    [res] = run(api, [preempt("research/sim-sweep")])
    job = cluster.get(*VCJ, "sim-sweep", "research")
    assert job["metadata"]["annotations"][r.SUSPENDED_BY] == "gpu-reclaimer"
    assert len(cluster.all(*CMD)) == int(stored)
    if stored:
        assert res.outcome is Outcome.APPLIED, res
        assert "read back" in res.detail and events_for(cluster, "sim-sweep")
    else:
        assert res.outcome is Outcome.FAILED and res.http_status == 504
        assert res.detail.startswith("not confirmed: ") and not events_for(cluster, "sim-sweep")


def test_resume_pytorchjob_only_what_it_suspended(api, cluster: FakeCluster) -> None:
    foreign = copy.deepcopy(cluster.get(*PYT, "old-train", "research"))
    foreign["metadata"] = {"name": "manual-hold", "namespace": "research"}
    cluster.add(foreign)  # suspended by someone else: no gpu-reclaim.io/ record
    ours, theirs = run(api, [resume("research/old-train"), resume("research/manual-hold")])
    assert ours.outcome is Outcome.APPLIED, ours
    job = cluster.get(*PYT, "old-train", "research")
    assert job["spec"]["runPolicy"]["suspend"] is False
    ann = job["metadata"].get("annotations") or {}
    assert r.SUSPENDED_BY not in ann and ann[r.RESUMED_AT] == "2026-11-30T00:53:20Z"
    assert theirs.outcome is Outcome.SKIPPED and theirs.skip_reason is Reason.OPTED_OUT
    assert cluster.get(*PYT, "manual-hold", "research")["spec"]["runPolicy"]["suspend"] is True


def test_resume_volcano_job(api, cluster: FakeCluster) -> None:
    job = cluster.get(*VCJ, "sim-sweep", "research")
    job["status"]["state"]["phase"] = "Aborted"
    job["metadata"]["annotations"] = {
        r.SUSPENDED_BY: "gpu-reclaimer",
        r.SUSPENDED_AT: "2026-11-29T01:00:00Z",
    }
    [res] = run(api, [resume("research/sim-sweep")])
    assert res.outcome is Outcome.APPLIED, res
    [cmd] = cluster.all(*CMD)
    assert cmd["action"] == "ResumeJob" and cmd["target"]["name"] == "sim-sweep"
    assert (
        r.SUSPENDED_BY not in cluster.get(*VCJ, "sim-sweep", "research")["metadata"]["annotations"]
    )


def _volcano_state(cluster: FakeCluster, phase: str, retry: int, suspended: bool) -> None:
    job = cluster.get(*VCJ, "sim-sweep", "research")
    job["status"] = {"state": {"phase": phase}, "retryCount": retry}
    if suspended:
        job["metadata"]["annotations"] = {r.SUSPENDED_BY: "gpu-reclaimer"}


@pytest.mark.parametrize(
    ("action", "phase", "retry", "says"),
    [
        (preempt, "Restarting", 0, "is Restarting"),
        (preempt, "Aborted", 0, "is Aborted"),
        (preempt, "Running", 2, "has used 2 of maxRetry 3"),
        # a record on a Running job is a stop never carried out, not a suspension to resume
        (resume, "Running", 0, "was not suspended by the reclaimer"),
        (resume, "Aborted", 2, "has used 2 of maxRetry 3"),
    ],
    ids=[
        "abort-restarting",
        "abort-aborted",
        "abort-last-retry",
        "resume-not-aborted",
        "resume-would-fail",
    ],
)
def test_volcano_command_volcano_would_ignore_or_fail_on_is_skipped(
    api, cluster: FakeCluster, action: Any, phase: str, retry: int, says: str
) -> None:
    _volcano_state(cluster, phase, retry, suspended=action is resume)
    before = _state(cluster)
    [res] = run(api, [action("research/sim-sweep")])
    assert res.outcome is Outcome.SKIPPED and says in res.detail, res
    assert not cluster.writes() and _state(cluster) == before


def test_abort_allowed_with_a_raised_max_retry(api, cluster: FakeCluster) -> None:
    _volcano_state(cluster, "Running", 2, suspended=False)
    cluster.get(*VCJ, "sim-sweep", "research")["spec"]["maxRetry"] = 5
    [res] = run(api, [preempt("research/sim-sweep")])
    assert res.outcome is Outcome.APPLIED, res
    assert [c["action"] for c in cluster.all(*CMD)] == ["AbortJob"]


def test_bare_pod_blocked_by_pdb_is_skipped_untouched(api, cluster: FakeCluster) -> None:
    [res] = run(api, [preempt("team-a/notebook-0")])
    assert res.outcome is Outcome.SKIPPED
    assert "PodDisruptionBudget team-a/notebook-pdb allows 0" in res.detail
    pod = cluster.get(*POD, "notebook-0", "team-a")
    assert r.EVICTED_AT not in (pod["metadata"].get("annotations") or {})
    assert cluster.writes() == []  # the budget, read again before acting, stops it first


def test_bare_pod_eviction_answering_429_is_skipped(api, cluster: FakeCluster) -> None:
    """A budget that tightens between the check and the eviction: the Eviction API's 429."""
    pdb = cluster.get("policy", "v1", "poddisruptionbudgets", "notebook-pdb", "team-a")
    pdb["spec"]["minAvailable"] = 0
    cluster.inject("POST", "/eviction$", status=429)
    [res] = run(api, [preempt("team-a/notebook-0")])
    assert (res.outcome, res.http_status) == (Outcome.SKIPPED, 429)
    pod = cluster.get(*POD, "notebook-0", "team-a")
    assert r.EVICTED_AT not in (pod["metadata"].get("annotations") or {})


def test_bare_pod_evicted_when_budget_allows(api, cluster: FakeCluster) -> None:
    """An integer minAvailable counts the selected pods themselves: 1 Ready pod, 0 wanted."""
    pdb = cluster.get("policy", "v1", "poddisruptionbudgets", "notebook-pdb", "team-a")
    pdb["spec"] = {"selector": pdb["spec"]["selector"], "minAvailable": 0}
    [res] = run(api, [preempt("team-a/notebook-0")])
    assert res.outcome is Outcome.APPLIED, res
    pod = cluster.get(*POD, "notebook-0", "team-a")
    assert pod["metadata"]["deletionTimestamp"]  # Terminating for its grace period
    assert pod["metadata"]["deletionGracePeriodSeconds"] == 30
    evictions = [q for q in cluster.writes() if q.path.endswith("/eviction")]
    assert [q.dry_run for q in evictions] == [True, False]
    assert events_for(cluster, "notebook-0")[0]["involvedObject"]["kind"] == "Pod"
    assert cluster.finish_termination("team-a", "notebook-0") == 1
    assert cluster.get(*POD, "notebook-0", "team-a") is None


@pytest.mark.parametrize(
    "budget",
    [{"maxUnavailable": 1}, {"minAvailable": "0%"}],
    ids=["maxUnavailable-1", "minAvailable-0pct"],
)
def test_a_bare_pod_under_a_scaled_budget_is_never_evicted(
    api, cluster: FakeCluster, budget: dict[str, Any]
) -> None:
    """maxUnavailable and percentages count against the owner's scale; a pod with no owner has
    none, so the disruption controller allows 0 and the Eviction API would answer 429."""
    pdb = cluster.get("policy", "v1", "poddisruptionbudgets", "notebook-pdb", "team-a")
    pdb["spec"] = {"selector": pdb["spec"]["selector"], **budget}
    [res] = run(api, [preempt("team-a/notebook-0")])
    assert res.outcome is Outcome.SKIPPED, res
    assert "PodDisruptionBudget team-a/notebook-pdb allows 0" in res.detail
    assert cluster.writes() == []


def _state(cluster: FakeCluster) -> dict[Any, Any]:
    return copy.deepcopy(cluster.objects)


@pytest.mark.parametrize(
    "action",
    [
        preempt("research/bert-train"),
        preempt("research/sim-sweep"),
        resume("research/old-train"),
        reshape("gpu-node-1", 1, 2),
    ],
    ids=["pytorchjob", "volcano-job", "resume", "reshape"],
)
def test_dry_run_changes_nothing_but_sends_every_write(
    api, cluster: FakeCluster, action: Action
) -> None:
    before = _state(cluster)
    [res] = run(api, [action], dry_run=True)
    assert res.outcome is Outcome.DRY_RUN, res
    assert _state(cluster) == before
    writes = cluster.writes()
    assert writes and all(q.dry_run for q in writes)
    assert res.writes == len(writes)
    assert any(q.path.endswith("/events") for q in writes)


def test_dry_run_reports_the_budget_as_apply_would(api, cluster: FakeCluster) -> None:
    [res] = run(api, [preempt("team-a/notebook-0")], dry_run=True)
    assert res.outcome is Outcome.SKIPPED and "PodDisruptionBudget" in res.detail
    cluster.objects[("policy", "v1", "poddisruptionbudgets")].clear()
    before = _state(cluster)
    [res] = run(api, [preempt("team-a/notebook-0")], dry_run=True)
    assert res.outcome is Outcome.DRY_RUN and _state(cluster) == before


def test_conflict_rereads_and_retries_once(api, cluster: FakeCluster) -> None:
    cluster.inject("PATCH", "/pytorchjobs/bert-train$", 409)
    [res] = run(api, [preempt("research/bert-train")])
    assert res.outcome is Outcome.APPLIED and "after a conflict" in res.detail
    paths = [(q.method, q.path) for q in cluster.requests if "bert-train" in q.path]
    assert [m for m, _ in paths] == ["GET", "PATCH", "GET", "PATCH"]


def test_conflict_twice_fails_without_raising(api, cluster: FakeCluster) -> None:
    cluster.inject("PATCH", "/pytorchjobs/bert-train$", 409, times=2)
    [res] = run(api, [preempt("research/bert-train")])
    assert (res.outcome, res.http_status) == (Outcome.FAILED, 409)
    assert (
        cluster.get(*PYT, "bert-train", "research")["spec"].get("runPolicy", {}).get("suspend")
        is None
    )


@pytest.mark.parametrize(
    ("status", "delay", "outcome", "code"),
    [
        (500, 0.0, Outcome.FAILED, 500),
        (429, 0.0, Outcome.SKIPPED, 429),
        (None, NEVER_S, Outcome.FAILED, 0),  # the client times out, however busy the machine
    ],
    ids=["500", "429-throttled", "timeout"],
)
def test_failure_skips_that_action_and_keeps_going(
    api,
    timing_out_api,
    cluster: FakeCluster,
    status: int | None,
    delay: float,
    outcome: Outcome,
    code: int,
) -> None:
    cluster.inject("PATCH", "/pytorchjobs/bert-train$", status, delay=delay)
    client = timing_out_api if delay else api
    first, second = run(client, [preempt("research/bert-train"), preempt("research/sim-sweep")])
    assert (first.outcome, first.http_status) == (outcome, code)
    assert second.outcome is Outcome.APPLIED
    assert cluster.all(*CMD)


@pytest.mark.parametrize(
    ("dry_run", "outcome"),
    [(True, Outcome.SKIPPED), (False, Outcome.FAILED)],
    ids=["dry-run-skips", "apply-fails"],
)
def test_forbidden_write_is_a_skip_only_in_dry_run(
    api, cluster: FakeCluster, dry_run: bool, outcome: Outcome
) -> None:
    """The dry-run overlay's RBAC grants no reshape writes; enforce mode does, so 403 fails."""
    cluster.inject("PATCH", "/configmaps/", 403)
    [res] = run(api, [reshape("gpu-node-1", 1, 2)], dry_run=dry_run)
    assert (res.outcome, res.http_status) == (outcome, 403)
    if dry_run:
        assert "RBAC" in res.detail


@pytest.mark.parametrize(
    ("target", "store"),
    [("research/bert-train", PYT), ("research/sim-sweep", VCJ), ("team-a/notebook-0", POD)],
    ids=["pytorchjob", "volcano-job", "pod"],
)
def test_vanished_object_is_skipped_quietly(
    api, cluster: FakeCluster, target: str, store: Any
) -> None:
    view = read_cluster_sync(api, now=NOW)
    ns, name = target.split("/")
    del cluster.objects[store][(ns, name)]
    [res] = Actuator(api, clock=lambda: NOW, dry_run=False).apply([preempt(target)], view)
    assert (res.outcome, res.http_status) == (Outcome.SKIPPED, 404)
    assert not cluster.writes()


@pytest.mark.parametrize("dry_run", [False, True], ids=["apply", "dry-run"])
@pytest.mark.parametrize(
    ("limits", "skipped"),
    [
        (Limits(max_preemptions_per_cycle=1), "maxPreemptionsPerCycle"),
        (Limits(max_preemptions_per_namespace=1), "maxPreemptionsPerNamespace"),
        (Limits(max_pods_per_node=3), "maxPreemptedPodsPerNode"),
        (Limits(max_gpus_freed_per_cycle=3), "maxGpusFreedPerCycle"),
    ],
    ids=["per-cycle", "per-namespace", "per-node", "gpus-freed"],
)
def test_limits_enforced(
    api, cluster: FakeCluster, limits: Limits, skipped: str, dry_run: bool
) -> None:
    before = _state(cluster)
    first, second = run(
        api,
        [preempt("research/bert-train"), preempt("research/sim-sweep")],
        dry_run=dry_run,
        policy=Policy(limits=limits),
    )
    assert first.outcome is (Outcome.DRY_RUN if dry_run else Outcome.APPLIED)
    assert second.outcome is Outcome.SKIPPED and second.skip_reason is Reason.LIMIT_REACHED
    assert skipped in second.detail and second.writes == 0
    if dry_run:
        assert _state(cluster) == before


def test_cooldown_and_opt_out(api, cluster: FakeCluster) -> None:
    job = cluster.get(*PYT, "bert-train", "research")
    job["metadata"]["annotations"][r.RESUMED_AT] = "2026-11-30T00:50:00Z"  # 200 s before NOW
    cluster.get(*POD, "sim-sweep-sim-1", "research")["metadata"]["annotations"][
        "volcano.sh/preemptable"
    ] = "false"
    cooled, opted = run(api, [preempt("research/bert-train"), preempt("research/sim-sweep")])
    assert cooled.skip_reason is Reason.COOLING_DOWN
    assert opted.skip_reason is Reason.OPTED_OUT
    assert not cluster.writes()


def test_disabled_action_kind(api, cluster: FakeCluster) -> None:
    [res] = run(
        api, [preempt("research/bert-train")], policy=Policy(actions=Actions(preempt=False))
    )
    assert res.outcome is Outcome.SKIPPED and not cluster.writes()


def test_not_leader_writes_nothing(api, cluster: FakeCluster) -> None:
    results = run(
        api, [preempt("research/bert-train"), reshape("gpu-node-1", 1, 2)], may_write=lambda: False
    )
    assert [x.outcome for x in results] == [Outcome.SKIPPED, Outcome.SKIPPED]
    assert not cluster.writes()


def test_event_failure_does_not_undo_the_action(api, cluster: FakeCluster) -> None:
    cluster.inject("POST", "/events$", 500)
    [res] = run(api, [preempt("research/bert-train")])
    assert res.outcome is Outcome.APPLIED and "event not recorded" in res.detail


def test_a_stop_records_the_pending_job_it_makes_room_for(api, cluster: FakeCluster) -> None:
    [res] = run(api, [preempt("research/bert-train")])
    assert res.outcome is Outcome.APPLIED, res
    notes = cluster.get(*PYT, "bert-train", "research")["metadata"]["annotations"]
    assert notes[r.ROOM_FOR] == "prod/llm-finetune"
    assert r.SUSPENDED_AT in notes
    [res] = run(api, [resume("research/bert-train")], now=NOW + 7200)
    assert res.outcome is Outcome.APPLIED, res
    notes = cluster.get(*PYT, "bert-train", "research")["metadata"].get("annotations") or {}
    assert r.ROOM_FOR not in notes and r.SUSPENDED_AT not in notes


@pytest.mark.parametrize(
    ("target", "selector"),
    [
        ("research/bert-train", {"matchLabels": {"training.kubeflow.org/job-name": "bert-train"}}),
        ("research/sim-sweep", {}),
    ],
    ids=["pytorchjob-matched-by-label", "volcano-job-by-an-empty-selector"],
)
def test_a_budget_blocks_suspending_a_whole_job(
    api, cluster: FakeCluster, target: str, selector: dict[str, Any]
) -> None:
    ns = target.split("/", maxsplit=1)[0]
    cluster.add(
        {
            "apiVersion": "policy/v1",
            "kind": "PodDisruptionBudget",
            "metadata": {"name": "keep-all", "namespace": ns},
            "spec": {"minAvailable": "100%", "selector": selector},
        }
    )
    before = _state(cluster)
    [res] = run(api, [preempt(target)])
    assert res.outcome is Outcome.SKIPPED
    assert res.detail.startswith(f"PodDisruptionBudget {ns}/keep-all allows")
    assert cluster.writes() == [] and _state(cluster) == before


@pytest.mark.parametrize("dry_run", [False, True], ids=["apply", "dry-run"])
def test_suspend_on_a_training_operator_without_suspend_fails_loudly(
    api, cluster: FakeCluster, dry_run: bool
) -> None:
    """Before v1.7 the CRD has no runPolicy.suspend: pruned silently, the job would run on."""
    cluster.training_operator = "v1.6"
    before = _state(cluster)
    [res] = run(api, [preempt("research/bert-train")], dry_run=dry_run)
    assert (res.outcome, res.http_status) == (Outcome.FAILED, 400)
    assert "older than training-operator v1.7" in res.detail
    assert _state(cluster) == before
    patch = next(q for q in cluster.writes() if q.method == "PATCH")
    assert patch.query["fieldValidation"] == ["Strict"]


def _owned(job: dict[str, Any]) -> None:
    ref = {"apiVersion": "example.com/v1", "kind": "Pipeline", "name": "p", "uid": "u"}
    job["metadata"]["ownerReferences"] = [{**ref, "controller": True}]


def _kueue(job: dict[str, Any]) -> None:
    job["metadata"].setdefault("labels", {})["kueue.x-k8s.io/queue-name"] = "lq"


def _multikueue(job: dict[str, Any]) -> None:
    job["spec"]["runPolicy"]["managedBy"] = "kueue.x-k8s.io/multikueue"


@pytest.mark.parametrize(
    ("take_over", "named"),
    [(_owned, "Pipeline research/p"), (_kueue, "Kueue"), (_multikueue, "multikueue")],
    ids=["an-unmanaged-owner", "kueue", "managed-by-multikueue"],
)
def test_a_job_taken_over_since_the_snapshot_is_not_stopped(
    api, cluster: FakeCluster, take_over: Any, named: str
) -> None:
    cluster.training_operator = "v1.9"  # the first with runPolicy.managedBy
    view = read_cluster_sync(api, now=NOW)
    take_over(cluster.get(*PYT, "bert-train", "research"))
    before = _state(cluster)
    [res] = Actuator(api, clock=lambda: NOW).apply([preempt("research/bert-train")], view)
    assert res.outcome is Outcome.SKIPPED and named in res.detail, res
    assert cluster.writes() == [] and _state(cluster) == before


def test_a_guaranteed_job_is_never_stopped_whatever_the_plan_says(
    api, cluster: FakeCluster
) -> None:
    """prod is not reclaimable: a preempt of its job (a plan built from other inputs, or a
    planner bug) is refused before any write, in dry-run and applied alike."""
    for dry_run in (True, False):
        [res] = run(api, [preempt("prod/llm-finetune")], dry_run=dry_run)
        assert res.outcome is Outcome.SKIPPED and res.skip_reason is Reason.NOT_RECLAIMABLE
        assert "not reclaimable" in res.detail and res.writes == 0
    assert not cluster.writes()
