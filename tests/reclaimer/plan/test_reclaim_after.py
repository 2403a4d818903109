"""`reclaimAfter`: a pending job takes victims only once it has waited that long.

Room often frees itself within minutes; a victim taken for a job that would have started anyway
loses its work for nothing. Until then the job stays unserved (it still holds resumes back).
"""

from __future__ import annotations

from collections.abc import Callable

import pytest
from planworld import NOW, World, starved_world

from reclaimer.decisions import ActionKind, Reason
from reclaimer.policy.settings import Policy, PolicyError, load_policy

Case = Callable[[], World]
AFTER_15M = Policy(reclaim_after_seconds=900.0)


def _idle_victim(waited: float) -> World:
    return (
        starved_world()
        .job("be/idle", "be", {"n1": 8}, idle=0.99)
        .job("be/other", "be", {"n2": 8}, busy=True)
        .pend("ls/x", "ls", 8, since=NOW - waited)
    )


CASES = [
    pytest.param(
        lambda: _idle_victim(899),
        AFTER_15M,
        set(),
        {"ls/x": Reason.WAITED_BRIEFLY, "be/idle": Reason.NO_DEMAND},
        id="waited-less-takes-no-victim",
    ),
    pytest.param(lambda: _idle_victim(900), AFTER_15M, {"be/idle"}, {}, id="waited-long-enough"),
    pytest.param(
        lambda: _idle_victim(0),
        Policy(reclaim_after_seconds=0.0),
        {"be/idle"},
        {},
        id="zero-takes-victims-at-once",
    ),
    pytest.param(
        lambda: starved_world().job("be/idle", "be", {"n1": 8}, idle=0.99).pend("ls/x", "ls", 8),
        AFTER_15M,
        set(),
        {"ls/x": Reason.FITS_FREE},
        id="free-room-is-granted-whatever-the-wait",
    ),
    pytest.param(
        lambda: _idle_victim(899).suspended("be/s", "be", 8).pend("ls/y", "ls", 8, since=NOW - 10),
        AFTER_15M,
        set(),
        {"ls/x": Reason.WAITED_BRIEFLY, "be/s": Reason.DEMAND_WAITING},
        id="a-job-waiting-briefly-still-holds-resumes-back",
    ),
    pytest.param(
        lambda: (
            starved_world()
            .job("be/busy", "be", {"n1": 8}, busy=True)
            .job("be/other", "be", {"n2": 8}, busy=True)
            .pend("ls/x", "ls", 8, since=NOW - 720)
        ),
        Policy(reclaim_after_seconds=900.0, reclaim_busy_after_seconds=600.0),
        set(),
        {"ls/x": Reason.WAITED_BRIEFLY},
        id="busy-victims-wait-for-reclaimAfter-too",
    ),
]


@pytest.mark.parametrize(("build", "policy", "preempted", "skips"), CASES)
def test_reclaim_after(
    build: Case, policy: Policy, preempted: set[str], skips: dict[str, Reason]
) -> None:
    plan = build().plan(policy)
    assert {a.target for a in plan.actions if a.kind is ActionKind.PREEMPT} == preempted
    got = {s.target: s.reason for s in plan.skipped}
    assert {t: got.get(t) for t in skips} == skips


def test_the_skip_says_how_long_the_job_waited_of_how_long() -> None:
    (skip,) = [s for s in _idle_victim(300).plan(AFTER_15M).skipped if s.target == "ls/x"]
    assert skip.detail == "waited 5m of reclaimAfter 15m"


@pytest.mark.parametrize(
    ("text", "seconds"),
    [("reclaimAfter: 15m", 900.0), ("reclaimAfter: 0", 0.0), ("reclaimAfter: 90s", 90.0)],
)
def test_reclaim_after_is_a_duration(text: str, seconds: float) -> None:
    assert load_policy(text).reclaim_after_seconds == seconds


@pytest.mark.parametrize("text", ["reclaimAfter: -5m", "reclaimAfter: null", "reclaimAfter: soon"])
def test_a_bad_reclaim_after_is_refused_with_its_path(text: str) -> None:
    with pytest.raises(PolicyError) as raised:
        load_policy(text)
    assert raised.value.errors[0].startswith("reclaimAfter: ")
