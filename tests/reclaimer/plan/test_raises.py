"""The raise gates in plan(): memory headroom for the new pods, and the node's load outlook."""

from __future__ import annotations

from dataclasses import replace

import pytest

from reclaimer.decisions import ActionKind, Reason
from reclaimer.model import DataQuality, GpuStats, MemoryPeaks
from reclaimer.policy.settings import Policy, TimeSlicing
from tests.reclaimer.planworld import HOUR, NOW, World, fleet_peaks

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


def test_pods_that_will_grow_leave_no_memory_headroom() -> None:
    """Two pods hold 1.6 GiB each now (20% of 16 GiB), but the week's pods peaked at 6 GiB: the
    two may come to hold 12 GiB, so a third would leave less than 10% free. (Budgeting by what
    they hold now would raise: 14.4 - 3.2 GiB holds seven more like them.)"""
    world = _node(memory=0.2).usage("be/a-0", "n1", "GPU-n1-0", 0.1, 1.6 * GIB)
    world.usage("ls/b-0", "n1", "GPU-n1-0", 0.1, 1.6 * GIB)
    world.memory_peaks = fleet_peaks(*[6.0] * 20)
    reason, to, detail = _verdict(world)
    assert (reason, to) == (Reason.NO_MEMORY_HEADROOM, None)
    assert "6.0 GiB" in detail and "99% memory peak" in detail and "10% free" in detail
    assert "2 pod(s) budgeted 12.0 GiB" in detail and "room for 2 pod(s)" in detail


def test_headroom_lowers_the_raise_to_what_fits() -> None:
    """40% used (6.4 GiB) by one pod, pods peak at 3 GiB: 14.4 - 6.4 = 8 GiB holds two more,
    so 2 -> 3 (three pods); with 30% headroom, 11.2 - 6.4 = 4.8 GiB holds one: no raise."""
    world = _node(memory=0.4).usage("be/p-0", "n1", "GPU-n1-0", 0.1, 3 * GIB)
    world.memory_peaks = fleet_peaks(*[3.0] * 20)
    assert _verdict(world)[:2] == (Reason.NODE_UNDERUSED, 3)
    tight = Policy(time_slicing=TimeSlicing(memory_headroom=0.3))
    assert _verdict(world, tight)[0] is Reason.NO_MEMORY_HEADROOM


def test_the_quantile_of_the_peaks_sets_the_budget() -> None:
    """18 pods peaked at 2 GiB and 2 at 7: the 99% peak is 7 GiB (no raise: a third would pass
    14.4 GiB; two still fit the 16 GiB, so nothing lowers the node), the 90% 2 GiB."""
    world = _node()
    world.memory_peaks = fleet_peaks(*[2.0] * 18, 7.0, 7.0)
    assert _verdict(world)[0] is Reason.NO_MEMORY_HEADROOM
    p90 = Policy(time_slicing=TimeSlicing(memory_peak_quantile=0.9))
    assert _verdict(world, p90)[:2] == (Reason.NODE_UNDERUSED, 4)


def test_a_pod_that_peaked_high_is_budgeted_at_its_peak() -> None:
    """The pod holds 1 GiB now but peaked at 13 GiB this week: 14.4 - 13 leaves no new slot.
    (It is one pod in 201, so the fleet's 99% peak, every slot's budget, stays 1 GiB.)"""
    world = _node(memory=0.0625).usage("ls/big-0", "n1", "GPU-n1-0", 0.1, 1 * GIB)
    world.memory_peaks = fleet_peaks(*[1.0] * 200)
    assert _verdict(world)[:2] == (Reason.NODE_UNDERUSED, 4)
    peaks = dict(world.memory_peaks.pods, **{"ls/big-0": 13 * GIB})
    world.memory_peaks = replace(world.memory_peaks, pods=peaks)
    reason, _, detail = _verdict(world)
    assert reason is Reason.NO_MEMORY_HEADROOM and "budgeted 13.0 GiB" in detail


@pytest.mark.parametrize(
    ("peaks", "says"),
    [
        pytest.param(None, "not read", id="unread"),
        pytest.param(fleet_peaks(error="query failed: 422"), "422", id="failed"),
        pytest.param(fleet_peaks(*[1.0] * 9), "only 9 pod(s) measured over the last 7d", id="few"),
    ],
)
def test_unknown_pod_peaks_refuse_the_raise(peaks: MemoryPeaks | None, says: str) -> None:
    world = _node()
    world.memory_peaks = peaks
    reason, _, detail = _verdict(world)
    assert reason is Reason.NO_MEMORY_HEADROOM and says in detail


def test_unread_device_memory_refuses_the_raise() -> None:
    world = _node()
    world.nodes = [replace(n, gpu_stats=(GpuStats(0.1, 0.2, "GPU-n1-0"),)) for n in world.nodes]
    reason, _, detail = _verdict(world)
    assert reason is Reason.NO_MEMORY_HEADROOM and "not read" in detail


@pytest.mark.parametrize(
    ("history", "says"),
    [
        pytest.param(None, "no load history", id="none"),
        pytest.param([0.1] * (5 * DAY_HOURS), "sampled 5d of its 5d", id="five-days"),
        pytest.param(
            [float("nan")] * (10 * DAY_HOURS) + [0.1] * (5 * DAY_HOURS),
            "sampled 5d of its 15d",
            id="nan-then-five-days",
        ),
    ],
)
def test_too_little_load_history_refuses_the_raise(history: list[float] | None, says: str) -> None:
    world = _node()
    if history is None:
        world.nodes = [replace(n, load=None) for n in world.nodes]
    else:
        world.load("n1", history)
    reason, _, detail = _verdict(world)
    assert reason is Reason.NO_LOAD_HISTORY and "needs 14d8h" in detail and says in detail


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
