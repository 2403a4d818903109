"""`may_resume`: the cheap check that a cycle's plan could resume a job at all.

The replay asks it before its resume-only plans among hundreds of pending jobs, and skips the
plan when it says no; so it must never say no where `plan` would resume (with preemption on, a
stop may free slots, and it always says yes). The property test holds it
to that on any cluster the planner's property tests draw, in the replay's resume-only policy and
in the full one.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

import pytest
from hypothesis import given, settings

from reclaimer.decisions import ActionKind
from reclaimer.model import Forecast, Snapshot
from reclaimer.plan.planner import may_resume, plan
from reclaimer.policy.settings import Actions, Policy
from tests.reclaimer.plan.test_planner_properties import ANY_WORLD
from tests.reclaimer.planworld import HOUR, NOW, World, starved_world

RESUME_ONLY = Actions(preempt=False, resume=True, reshape=False)


def _resumes(snapshot: Snapshot, forecasts: dict[str, Forecast], policy: Policy) -> list[str]:
    p = plan(snapshot, forecasts, policy, NOW)
    return [a.target for a in p.actions if a.kind is ActionKind.RESUME]


@settings(max_examples=300, deadline=None)
@given(ANY_WORLD)
def test_no_means_the_plan_resumes_nothing(
    world: tuple[Snapshot, dict[str, Forecast], Policy],
) -> None:
    snapshot, forecasts, policy = world
    for p in (policy, replace(policy, actions=RESUME_ONLY)):
        if not may_resume(snapshot, p, NOW):
            assert _resumes(snapshot, forecasts, p) == []


@pytest.mark.parametrize(
    ("build", "expected"),
    [
        pytest.param(
            lambda: starved_world().suspended("be/s", "be", 8).acted("be/s", 2 * HOUR),
            True,
            id="fits-and-cooled-down",
        ),
        pytest.param(
            lambda: starved_world().suspended("be/s", "be", 8).acted("be/s", 600),
            False,
            id="within-its-cool-down",
        ),
        pytest.param(
            lambda: (
                starved_world()
                .job("be/a", "be", {"n1": 8}, busy=True)
                .job("be/b", "be", {"n2": 4}, busy=True)
                .suspended("be/s", "be", 8)
            ),
            False,
            id="does-not-fit-the-free-slots",
        ),
        pytest.param(
            lambda: (
                starved_world()
                .job("be/a", "be", {"n1": 4, "n2": 4}, busy=True)
                .suspended("be/s", "be", 8, pods=2)
            ),
            True,
            id="gang-fits-across-nodes",
        ),
        pytest.param(starved_world, False, id="nothing-held"),
    ],
)
def test_answers(build: Callable[[], World], expected: bool) -> None:
    snapshot = build().snapshot()
    resume_only = replace(Policy(), actions=RESUME_ONLY)
    assert may_resume(snapshot, resume_only, NOW) is expected
    assert bool(_resumes(snapshot, {}, resume_only)) is expected  # the plan agrees here
    assert may_resume(snapshot, Policy(), NOW) is True  # a stop may free slots: cannot tell
    assert may_resume(snapshot, replace(Policy(), actions=Actions(resume=False)), NOW) is False
