"""Guaranteed pods that wait for a busy neighbour lower their time-sliced node, and a raise that
would make them wait is refused or held lower (`reclaimer.plan.contend`)."""

from __future__ import annotations

import pytest

from reclaimer.decisions import ActionKind, Reason
from reclaimer.model import Contention, PodBusy
from reclaimer.plan.contend import predicted
from reclaimer.policy.settings import Policy, TimeSlicing
from tests.reclaimer.planworld import HOUR, NOW, World, fleet_contention

Verdict = tuple[Reason, tuple[int | None, int | None] | None, str]


def _world(replicas: int = 2, util: float = 0.2, **node: object) -> World:
    """n1: one GPU at `util` (0.2 is underused: the load rule raises it to 4), holding the
    guaranteed pods ls/a-0 and ls/b-0 and the reclaimable be/c-0; n2 holds ls/d-0 alone."""
    return (
        World()
        .node("n1", gpus=1, replicas=replicas, **node)
        .node("n2", gpus=1, replicas=1)
        .stats("n1", (util, 0.1))
        .queue("ls", reclaimable=False)
        .queue("be")
        .job("ls/a", "ls", {"n1": 1})
        .job("ls/b", "ls", {"n1": 1})
        .job("be/c", "be", {"n1": 1})
        .job("ls/d", "ls", {"n2": 1})
    )


def _read(
    world: World, busy: float = 0.01, rows: dict[str, tuple[float, float]] | None = None
) -> World:
    """The day's reading: the fleet busy `busy` of its time, and `rows` (pod key -> (busy
    hours, co-busy hours) over a day)."""
    pods = {k: PodBusy(86400.0, b * HOUR, c * HOUR) for k, (b, c) in (rows or {}).items()}
    world.contention = fleet_contention(busy, pods=200, rows=pods)
    return world


def _verdict(world: World, ts: TimeSlicing | None = None) -> Verdict:
    """What the plan says of n1: (reason, (from, to) or None, evidence or skip detail)."""
    p = world.plan(Policy(time_slicing=ts or TimeSlicing()))
    for a in p.actions:
        if a.kind is ActionKind.RESHAPE and a.target == "n1":
            return a.reason, (a.from_replicas, a.to_replicas), a.evidence.detail
    (skip,) = [s for s in p.skipped if s.target == "n1"]
    return skip.reason, None, skip.detail


CONTEND = {"ls/a-0": (4.0, 1.0), "ls/b-0": (4.0, 1.0)}  # each busy 4 h, 1 h of it co-busy: 25%


def test_guaranteed_pods_that_contend_lower_the_node() -> None:
    reason, change, says = _verdict(_read(_world(), rows=CONTEND))
    assert (reason, change) == (Reason.PODS_CONTEND, (2, 1))
    assert "25% of their 8h busy over 1d" in says


def test_one_replica_lower_at_a_time() -> None:
    assert _verdict(_read(_world(replicas=4), rows=CONTEND))[:2] == (Reason.PODS_CONTEND, (4, 3))


@pytest.mark.parametrize(
    ("rows", "why"),
    [
        pytest.param({"ls/a-0": (4.0, 0.1), "ls/b-0": (4.0, 0.1)}, "2.5%", id="within-the-limit"),
        pytest.param({"be/c-0": (8.0, 8.0)}, "reclaimable", id="only-reclaimable-pods-contend"),
        pytest.param({"ls/d-0": (8.0, 8.0)}, "another-node", id="guaranteed-pods-elsewhere"),
        pytest.param({"ls/a-0": (0.4, 0.4), "ls/b-0": (0.4, 0.4)}, "48m", id="too-little-busy"),
    ],
)
def test_no_lowering_without_evidence_here(rows: dict[str, tuple[float, float]], why: str) -> None:
    reason, change, _ = _verdict(_read(_world(), rows=rows))
    assert (reason, change) == (Reason.NODE_UNDERUSED, (2, 4)), why


def test_the_limit_at_1_turns_the_rules_off() -> None:
    off = TimeSlicing(max_cobusy_share=1.0)
    assert _verdict(_read(_world(), busy=0.33, rows=CONTEND), off)[:2] == (
        Reason.NODE_UNDERUSED,
        (2, 4),
    )


def test_no_reading_applies_no_rule() -> None:
    assert _world().contention is None
    assert _verdict(_world())[:2] == (Reason.NODE_UNDERUSED, (2, 4))


def test_a_raise_that_would_contend_is_refused() -> None:
    reason, change, says = _verdict(_read(_world(), busy=0.33))
    assert (reason, change) == (Reason.WOULD_CONTEND, None)
    assert "pods are busy 33% of their time" in says
    assert "about 55% of its busy time at 3" in says


def test_a_raise_is_held_to_what_the_limit_allows() -> None:
    assert predicted(0.02, 3) <= 0.05 < predicted(0.02, 4)
    assert _verdict(_read(_world(), busy=0.02))[:2] == (Reason.NODE_UNDERUSED, (2, 3))


def test_a_node_whose_pods_contend_is_not_raised_even_within_the_limit() -> None:
    ts = TimeSlicing(max_cobusy_share=0.2)  # the fleet predicts little; n1's pods contend 25%
    world = _read(_world(), busy=0.01, rows=CONTEND)
    reason, change, says = _verdict(world, ts)
    assert (reason, change) == (Reason.PODS_CONTEND, (2, 1))
    assert "(maxCobusyShare 20%)" in says


@pytest.mark.parametrize(
    ("reading", "says"),
    [
        pytest.param(
            Contention(86400.0, {"ls/a-0": PodBusy(9e4, 9e4, 9e4)}, error="query failed"),
            "query failed",
            id="unread-lowers-nothing",
        ),
        pytest.param(fleet_contention(0.01, pods=9), "9 pods read", id="too-few-pods"),
    ],
)
def test_unknown_refuses_a_raise(reading: Contention, says: str) -> None:
    world = _world()
    world.contention = reading
    reason, change, detail = _verdict(world)
    assert (reason, change) == (Reason.WOULD_CONTEND, None)
    assert f"contention is unknown: {says}" in detail


def test_a_whole_pool_node_is_not_raised_into_contention() -> None:
    world = _read(_world(replicas=1, pool=True), busy=0.33)
    assert _verdict(world)[:2] == (Reason.WOULD_CONTEND, None)


def test_raises_are_held_after_a_lowering_for_contention() -> None:
    lowered = _world(
        replicas=1, pool=True, reshape_reason=Reason.PODS_CONTEND.value, last_reshape=NOW - HOUR
    )
    reason, change, _ = _verdict(_read(lowered, busy=0.0))
    assert (reason, change) == (Reason.RAISE_HELD, None)
