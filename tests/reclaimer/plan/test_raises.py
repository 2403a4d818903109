"""The raise gates in plan(): memory headroom for the new pods, and the node's load outlook."""

from __future__ import annotations

from dataclasses import replace

import pytest

from reclaimer.decisions import ActionKind, Reason
from reclaimer.model import DataQuality, GpuStats
from reclaimer.policy.settings import Policy, TimeSlicing
from tests.reclaimer.planworld import HOUR, NOW, World

GIB = 1024.0**3
DAY_HOURS = 24


def _node(util: float = 0.1, memory: float = 0.2) -> World:
    """One GPU at 2 replicas, underused: the planner wants to raise it (to 4, the default max)."""
    return World().node("n1", gpus=1, replicas=2).stats("n1", (util, memory))


def _verdict(world: World, policy: Policy | None = None) -> tuple[Reason, int | None, str]:
    plan = world.plan(policy)
    for a in plan.actions:
        if a.kind is ActionKind.RESHAPE:
            return a.reason, a.to_replicas, a.evidence.detail
    (skip,) = [s for s in plan.skipped if s.target == "n1"]
    return skip.reason, None, skip.detail


def _daily(
    busy_from: float, busy_to: float, busy: float, idle: float, days: int = 16
) -> list[float]:
    """Hourly load, `busy` from `busy_from` to `busy_to` hours after now's time of day."""
    n = days * DAY_HOURS
    out = []
    for i in range(n):
        hours_after_now = ((i - n) % DAY_HOURS + DAY_HOURS) % DAY_HOURS
        out.append(busy if busy_from <= hours_after_now < busy_to else idle)
    return out


def test_steady_low_load_raises() -> None:
    assert _verdict(_node())[:2] == (Reason.NODE_UNDERUSED, 4)


def test_a_big_neighbour_leaves_no_memory_headroom() -> None:
    """55% used, one pod holds 8 GiB: a new pod like it would leave less than 10% free (the
    fill-ratio rule alone, 55% x 3/2 < 90%, would raise)."""
    world = _node(memory=0.55).usage("be/big-0", "n1", "GPU-n1-0", 0.1, 8 * GIB)
    reason, to, detail = _verdict(world)
    assert (reason, to) == (Reason.NO_MEMORY_HEADROOM, None)
    assert "8.0 GiB" in detail and "10% free" in detail


def test_headroom_lowers_the_raise_to_what_fits() -> None:
    """40% used, the largest pod 3 GiB: 14.4 - 6.4 = 8 GiB holds two more, so 2 -> 4; with 20%
    headroom, 12.8 - 6.4 = 6.4 GiB holds two as well, with 30% only one (2 -> 3)."""
    world = _node(memory=0.4).usage("be/p-0", "n1", "GPU-n1-0", 0.1, 3 * GIB)
    assert _verdict(world)[:2] == (Reason.NODE_UNDERUSED, 4)
    tight = Policy(time_slicing=TimeSlicing(memory_headroom=0.3))
    assert _verdict(world, tight)[:2] == (Reason.NODE_UNDERUSED, 3)


def test_unread_device_memory_refuses_the_raise() -> None:
    world = _node()
    world.nodes = [replace(n, gpu_stats=(GpuStats(0.1, 0.2, "GPU-n1-0"),)) for n in world.nodes]
    reason, _, detail = _verdict(world)
    assert reason is Reason.NO_MEMORY_HEADROOM and "not read" in detail


@pytest.mark.parametrize(
    "history",
    [
        pytest.param(None, id="none"),
        pytest.param([0.1] * (5 * DAY_HOURS), id="five-days"),
    ],
)
def test_too_little_load_history_refuses_the_raise(history: list[float] | None) -> None:
    world = _node()
    if history is None:
        world.nodes = [replace(n, load=None) for n in world.nodes]
    else:
        world.load("n1", history)
    reason, _, detail = _verdict(world)
    assert reason is Reason.NO_LOAD_HISTORY and "needs 14d8h" in detail


def test_history_not_reaching_now_refuses_the_raise() -> None:
    world = _node().load("n1", [0.1] * (16 * DAY_HOURS))
    world.now = NOW + 3 * HOUR  # the history ends three hours ago
    world.quality = DataQuality(metrics_at=world.now - 30)
    assert _verdict(world)[0] is Reason.NO_LOAD_HISTORY


def test_a_busy_afternoon_ahead_refuses_the_raise() -> None:
    """Idle now (10%), but every day 3-6 h from now the node runs at 60%: within the 8 h
    horizon, so the raise would put the new pods into it."""
    world = _node().load("n1", _daily(3, 6, 0.6, 0.1))
    reason, _, detail = _verdict(world)
    assert reason is Reason.LOAD_FORECAST_HIGH and "within 8h" in detail


def test_a_busy_hour_beyond_the_horizon_allows_the_raise() -> None:
    world = _node().load("n1", _daily(10, 12, 0.6, 0.1))
    assert _verdict(world)[:2] == (Reason.NODE_UNDERUSED, 4)
    longer = Policy(time_slicing=TimeSlicing(raise_horizon_seconds=12 * HOUR))
    assert _verdict(world, longer)[0] is Reason.LOAD_FORECAST_HIGH


def test_the_outlook_lowers_the_raise() -> None:
    """A daily peak of 40% ahead: 40% x 3/2 = 60% fits the band's middle (65%), x 4/2 does not."""
    world = _node().load("n1", _daily(3, 6, 0.4, 0.1))
    assert _verdict(world)[:2] == (Reason.NODE_UNDERUSED, 3)
