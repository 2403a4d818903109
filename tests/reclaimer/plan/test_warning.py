"""Warnings before a stop: a job of a kind (or queue) with a warning period is warned first,
held while its countdown runs (its room counted for the demand that chose it), stopped once due,
kept by its owner up to `maxKeep`, and its warning withdrawn when it turns busy or its demand
goes away. The countdown is read from the job (`Job.warning`), never from the planner's memory."""

from __future__ import annotations

from planworld import NOW, World, forecast, starved_world

from reclaimer.decisions import ActionKind, Plan, Reason
from reclaimer.model import JobKind, PodGpuUsage, StopWarning
from reclaimer.plan.warning import at
from reclaimer.policy.settings import Policy, load_policy

TEN_MIN = load_policy("warning: {warnBefore: 10m}")


def _world(warning: StopWarning | None = None, **kw: object) -> World:
    return (
        starved_world()
        .job("be/idle", "be", {"n1": 8}, idle=0.99, warning=warning, **kw)
        .job("be/other", "be", {"n2": 8}, idle=0.95)
        .pend("ls/x", "ls", 8)
    )


def _warned(ago: float, period: float = 600.0, for_pending: str = "ls/x") -> StopWarning:
    at_ = NOW - ago
    return StopWarning(at_, at_ + period, for_pending, str(Reason.IDLE_FOR_STARVED_QUEUE))


def _kinds(p: Plan) -> list[tuple[ActionKind, str]]:
    return [(a.kind, a.target) for a in p.actions]


def _skip(p: Plan, target: str) -> Reason:
    return next(s.reason for s in p.skipped if s.target == target)


def test_a_first_pick_is_warned_with_its_stop_time_not_stopped() -> None:
    p = _world().plan(TEN_MIN)
    assert _kinds(p) == [(ActionKind.WARN, "be/idle")]
    ev = p.actions[0].evidence
    assert ev.stop_at == NOW + 600 and ev.warn_seconds == 600
    assert ev.for_pending == "ls/x" and ev.forecast is not None
    assert "stops in 10m" in ev.detail


def test_no_warning_by_default_for_a_training_job_but_for_a_notebook() -> None:
    assert _kinds(_world().plan()) == [(ActionKind.PREEMPT, "be/idle")]
    notebook = _world(kind=JobKind.NOTEBOOK).plan()
    assert _kinds(notebook) == [(ActionKind.WARN, "be/idle")]
    assert notebook.actions[0].evidence.warn_seconds == 600


def test_the_queue_setting_wins_over_the_kind() -> None:
    policy = load_policy("warning: {byQueue: {be: 0s}}")
    assert _kinds(_world(kind=JobKind.NOTEBOOK).plan(policy)) == [(ActionKind.PREEMPT, "be/idle")]


def test_a_warned_job_is_held_until_its_time_and_no_second_job_is_taken() -> None:
    p = _world(_warned(ago=599)).plan(TEN_MIN)
    assert p.actions == ()  # be/other, as idle, is not warned for the same demand
    assert _skip(p, "be/idle") is Reason.RECLAIM_SCHEDULED
    assert "in 1s" in next(s.detail for s in p.skipped if s.target == "be/idle")
    assert _skip(p, "be/other") is Reason.NO_DEMAND
    assert _skip(p, "ls/x") is Reason.ROOM_IN_FLIGHT


def test_a_warned_job_is_stopped_at_its_time_whatever_the_policy_says_now() -> None:
    p = _world(_warned(ago=600)).plan(Policy())  # the warning period since changed: kept
    assert _kinds(p) == [(ActionKind.PREEMPT, "be/idle")]
    assert p.actions[0].reason is Reason.IDLE_FOR_STARVED_QUEUE
    assert p.actions[0].evidence.for_pending == "ls/x"


def test_a_keep_postpones_the_stop_up_to_max_keep() -> None:
    kept = _world(_warned(ago=700), keep_until=NOW + 60).plan(TEN_MIN)
    assert kept.actions == ()
    assert _skip(kept, "be/idle") is Reason.RECLAIM_SCHEDULED
    assert [w.reason for w in kept.warnings] == [Reason.KEPT_BY_OWNER]
    assert at(NOW + 60) in kept.warnings[0].detail
    # scheduled at NOW - 100; a keep 5h on is capped at the stop + maxKeep (4h): due later
    capped = _world(_warned(ago=700), keep_until=NOW + 5 * 3600).plan(TEN_MIN)
    assert capped.actions == ()
    assert [w.reason for w in capped.warnings] == [Reason.KEEP_CAPPED]
    # scheduled 4h 1s ago: the cap has passed, though the keep asks for another hour
    due = _world(_warned(ago=4 * 3600 + 601), keep_until=NOW + 3600).plan(TEN_MIN)
    assert _kinds(due) == [(ActionKind.PREEMPT, "be/idle")]
    assert "capped" in due.actions[0].evidence.detail


def test_a_job_busy_again_is_cancelled_and_another_may_be_warned() -> None:
    w = _world(_warned(ago=300))
    w.forecasts["be/idle"] = forecast("be/idle", idle=False, confidence=0.1)
    p = w.plan(TEN_MIN)
    assert _kinds(p) == [(ActionKind.CANCEL, "be/idle"), (ActionKind.WARN, "be/other")]
    assert p.actions[0].reason is Reason.BUSY_AGAIN


def test_a_job_measured_busy_now_is_cancelled_though_still_forecast_idle() -> None:
    w = _world(_warned(ago=300))
    w.pod_gpus.append(PodGpuUsage("be/idle-0", "n1", "GPU-n1-0", busy=0.9))
    p = w.plan(TEN_MIN)
    assert _kinds(p)[0] == (ActionKind.CANCEL, "be/idle")
    assert p.actions[0].reason is Reason.BUSY_AGAIN
    assert "be/idle-0 is 90% busy now" in p.actions[0].evidence.detail
    quiet = _world(_warned(ago=300))
    quiet.pod_gpus.append(PodGpuUsage("be/idle-0", "n1", "GPU-n1-0", busy=0.01))
    assert quiet.plan(TEN_MIN).actions == ()


def test_a_warning_whose_demand_is_gone_is_withdrawn() -> None:
    gone = _world(_warned(ago=300, for_pending="ls/old")).plan(TEN_MIN)
    assert (ActionKind.CANCEL, "be/idle") in _kinds(gone)
    cancel = next(a for a in gone.actions if a.kind is ActionKind.CANCEL)
    assert cancel.reason is Reason.DEMAND_GONE and "ls/old" in cancel.evidence.detail


def test_a_warning_is_withdrawn_when_the_demand_fits_free_slots() -> None:
    w = (
        starved_world()
        .node("n3")
        .job("be/idle", "be", {"n1": 8}, idle=0.99, warning=_warned(ago=300))
        .pend("ls/x", "ls", 8)
    )
    p = w.plan(TEN_MIN)
    assert _kinds(p) == [(ActionKind.CANCEL, "be/idle")]
    assert p.actions[0].reason is Reason.DEMAND_GONE
    assert _skip(p, "ls/x") is Reason.FITS_FREE
