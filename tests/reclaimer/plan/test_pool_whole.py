"""Whole nodes of the managed pool (`Node.pool`): raised from 1 replica once the memory budget
says pods fit, through the same gates as any raise; never lowered below 1, never raised for
anything but being underused, and never when handed back whole or not in the pool."""

from __future__ import annotations

from dataclasses import replace

import pytest

from reclaimer.decisions import ActionKind, Reason
from reclaimer.model import ContainerCrash, MemoryPeaks
from reclaimer.plan.planner import plan
from reclaimer.policy.settings import Policy
from tests.reclaimer.planworld import NOW, World, fleet_peaks


def _verdict(
    util: float = 0.1,
    memory: float = 0.1,
    peaks: MemoryPeaks | None = None,
    crashes: tuple[ContainerCrash, ...] = (),
    pods: dict[str, int] | None = None,
    **node: object,
) -> tuple[Reason, tuple[int | None, int | None] | None, str]:
    """n1: 16 GiB GPUs at `util` and `memory`, 1 replica, in the pool unless told; `pods`:
    a running job's pods on it (pod GPUs by node)."""
    kw: dict[str, object] = {"replicas": 1, "pool": True} | node
    gpus = max([1, *(pods or {}).values()])
    world = World().node("n1", gpus=gpus, **kw).stats("n1", *[(util, memory)] * gpus)
    if pods:
        world.job("batch/wide", "batch", pods)
    world.memory_peaks = fleet_peaks(*[3.0] * 20) if peaks is None else peaks
    snapshot = replace(world.snapshot(), crashes=crashes)
    p = plan(snapshot, world.forecasts, Policy(), NOW)
    for a in p.actions:
        if a.kind is ActionKind.RESHAPE and a.target == "n1":
            return a.reason, (a.from_replicas, a.to_replicas), a.evidence.detail
    skips = [s for s in p.skipped if s.target == "n1"]
    return (skips[0].reason, None, skips[0].detail) if skips else (Reason.NO_CHANGE, None, "")


def test_an_underused_whole_pool_node_is_raised_when_the_budget_says_pods_fit() -> None:
    """3 GiB a pod on a 16 GiB GPU: the 90% headroom holds 4; 10% busy aims at the band's middle."""
    reason, change, text = _verdict()
    assert (reason, change) == (Reason.NODE_UNDERUSED, (1, 4)), text
    assert "raise gates allow 4" in text


def test_a_whole_pool_node_is_not_raised_while_the_budget_is_unknown() -> None:
    reason, change, text = _verdict(peaks=fleet_peaks(*[3.0] * 3))
    assert change is None and reason is Reason.NO_MEMORY_HEADROOM, text
    assert "3 pod" in text


def test_pods_too_large_to_share_keep_the_pool_node_whole() -> None:
    """12 GiB a pod: two do not fit 90% of 16 GiB, so the raise is refused."""
    reason, change, text = _verdict(peaks=fleet_peaks(*[12.0] * 20))
    assert (reason, change) == (Reason.NO_MEMORY_HEADROOM, None), text


@pytest.mark.parametrize(
    ("util", "memory"),
    [
        pytest.param(0.95, 0.1, id="saturated"),
        pytest.param(0.5, 0.1, id="in-the-band"),
        pytest.param(0.5, 0.97, id="memory-pressure"),
    ],
)
def test_a_whole_pool_node_is_never_lowered_or_raised_for_load(util: float, memory: float) -> None:
    reason, change, text = _verdict(util, memory)
    assert (reason, change) == (Reason.NO_CHANGE, None), text


def test_crashes_on_a_whole_node_lower_nothing_and_hold_raises() -> None:
    crash = ContainerCrash("ls/a-0", "n1", "main", NOW - 600, "Error", 1, restarts=2)
    reason, change, text = _verdict(crashes=(crash,))
    assert (reason, change) == (Reason.RAISE_HELD, None), text


@pytest.mark.parametrize(
    "node",
    [
        pytest.param({"pool": False}, id="not-in-the-pool"),
        pytest.param(
            {"reshape_reason": Reason.WHOLE_GPUS_FOR_PENDING.value}, id="handed-back-whole"
        ),
    ],
)
def test_other_whole_nodes_are_not_looked_at(node: dict[str, object]) -> None:
    reason, change, text = _verdict(**node)
    assert (reason, change, text) == (Reason.NO_CHANGE, None, "")


def test_a_whole_pool_node_is_not_raised_while_a_pod_holds_several_of_its_gpus() -> None:
    reason, change, text = _verdict(pods={"n1": 2})
    assert (reason, change) == (Reason.NO_CHANGE, None), text
    assert "batch/wide-0 holds 2 GPUs here" in text


def test_a_one_gpu_pod_does_not_keep_the_pool_node_whole() -> None:
    reason, change, text = _verdict(pods={"n1": 1})
    assert (reason, change) == (Reason.NODE_UNDERUSED, (1, 4)), text
