"""Kueue ClusterQueues in the planner: what of each may be stopped is the policy's `kueue`
section, by default only what runs above its nominal quota (on quota its cohort lent)."""

from __future__ import annotations

import pytest
from planworld import World

from reclaimer.decisions import ActionKind, Plan, Reason
from reclaimer.policy.kueue import Kueue, Reclaim
from reclaimer.policy.settings import Policy


def _cq(world: World, name: str, nominal: float) -> World:
    """A ClusterQueue deserving its nominal quota; no guarantee of its own here, so that what
    guards the quota is the policy's `kueue` section alone."""
    return world.queue(name, deserved_gpus=nominal, cluster_queue=True, cohort="gpus")


def _world(research_jobs: int) -> World:
    """`research` (2 nominal) runs `research_jobs` idle 2-GPU jobs, `prod` (2 nominal) one
    idle job; `team-b` (2 nominal) waits for 2 GPUs on a node they fill."""
    w = World().node("n1", gpus=2 * (research_jobs + 1))
    for name in ("research", "team-b", "prod"):
        w = _cq(w, name, 2.0)
    for i in range(research_jobs):
        w = w.job(f"research/j{i}", "research", {"n1": 2}, idle=0.99 - i * 0.01)
    w = w.job("prod/serve", "prod", {"n1": 2}, idle=0.999)
    return w.pend("team-b/llm", "team-b", 2)


def _stops(plan: Plan) -> list[str]:
    return [a.target for a in plan.actions if a.kind is ActionKind.PREEMPT]


def _policy(reclaim: Reclaim = Reclaim.BORROWED, **by_name: Reclaim) -> Policy:
    return Policy(kueue=Kueue(reclaim, by_name))


def test_by_default_only_a_job_on_borrowed_quota_is_stopped() -> None:
    plan = _world(2).plan(_policy())
    # research holds 4 of its 2 nominal: one job runs on lent quota, and goes; prod's idle job,
    # within its own quota, and research's other one stay
    assert _stops(plan) == ["research/j0"]
    why = {s.target: (s.reason, s.detail) for s in plan.skipped}
    assert why["prod/serve"] == (Reason.BELOW_GUARANTEE, "prod would drop below its guarantee of 2")


def test_by_default_a_queue_within_its_nominal_quota_keeps_its_jobs() -> None:
    plan = _world(1).plan(_policy())
    assert _stops(plan) == []
    why = {s.target: (s.reason, s.detail) for s in plan.skipped}
    assert why["research/j0"] == (
        Reason.BELOW_GUARANTEE,
        "research would drop below its guarantee of 2",
    )


@pytest.mark.parametrize(
    ("policy", "stops"),
    [
        pytest.param(_policy(Reclaim.ALL), ["prod/serve"], id="all-takes-the-most-idle"),
        pytest.param(
            _policy(Reclaim.ALL, prod=Reclaim.NONE), ["research/j0"], id="all-but-a-guaranteed-one"
        ),
        pytest.param(_policy(Reclaim.NONE), [], id="none"),
    ],
)
def test_the_policy_says_what_of_each_cluster_queue_may_be_stopped(
    policy: Policy, stops: list[str]
) -> None:
    assert _stops(_world(1).plan(policy)) == stops


def test_a_guaranteed_cluster_queue_is_not_reclaimable() -> None:
    plan = _world(1).plan(_policy(Reclaim.ALL, prod=Reclaim.NONE, research=Reclaim.NONE))
    assert _stops(plan) == []
    reasons = {s.target: s.reason for s in plan.skipped}
    assert reasons["prod/serve"] is Reason.NOT_RECLAIMABLE
    assert reasons["research/j0"] is Reason.NOT_RECLAIMABLE


def _mixed(pending_queue: str) -> World:
    """One 8-GPU node shared by both schedulers, full: Volcano's `vc-be` runs an idle job, and
    so do Kueue's `research` (cohort `gpus`, above its nominal quota) and `other` (its own
    cohort `solo`, above its quota too); the job waiting is in `pending_queue`."""
    w = World().node("n1", gpus=8)
    w = w.queue("vc-be", deserved_gpus=0.0).queue("vc-ls", deserved_gpus=2.0, reclaimable=False)
    w = _cq(_cq(w, "research", 0.0), "team-b", 2.0)
    w = w.queue("other", deserved_gpus=0.0, cluster_queue=True, cohort="solo")
    w = w.job("vc-be/a", "vc-be", {"n1": 2}, idle=0.99)
    w = w.job("research/b", "research", {"n1": 2}, idle=0.98)
    w = w.job("other/c", "other", {"n1": 2}, idle=0.999)
    w = w.job("vc-be/d", "vc-be", {"n1": 2}, busy=True)
    return w.pend(f"{pending_queue}/x", pending_queue, 2)


@pytest.mark.parametrize(
    ("pending_queue", "stops"),
    [
        # Kueue admits team-b's Workload once its cohort has quota: only research's job frees it,
        # not the more idle job of another cohort's queue, nor Volcano's
        pytest.param("team-b", ["research/b"], id="kueue-waits-for-its-cohort"),
        # Volcano's job takes Volcano's victim, never a job Kueue admits
        pytest.param("vc-ls", ["vc-be/a"], id="volcano-waits-for-volcano"),
    ],
)
def test_each_waiting_job_is_served_by_the_system_that_admits_it(
    pending_queue: str, stops: list[str]
) -> None:
    assert _stops(_mixed(pending_queue).plan(_policy())) == stops


def test_a_kueue_workload_is_not_served_by_stopping_a_volcano_job() -> None:
    w = _mixed("team-b")
    w.jobs = [j for j in w.jobs if j.key != "research/b"]
    w.pods = [p for p in w.pods if p.job != "research/b"]
    w = w.job("vc-be/e", "vc-be", {"n1": 2}, idle=0.97)
    assert _stops(w.plan(_policy())) == []
