"""Each queue's standing in the plan: deserved share, allocation and waiting demand at the start
of the cycle, whatever the cycle then decides."""

from __future__ import annotations

from planworld import contested_world

from reclaimer.model import DataQuality
from reclaimer.standing import QueueStanding


def test_standing_is_read_before_the_cycle_books_anything() -> None:
    world = contested_world().pend("ls/y", "ls", 4).pend("lost/z", "nowhere", 2)
    plan = world.plan()
    assert [a.target for a in plan.actions] == ["be/idle"]  # frees 8 GPUs for ls
    be, ls, nowhere = plan.queues
    assert be == QueueStanding("be", 8.0, 16.0, 0, 0)
    assert ls == QueueStanding("ls", 8.0, 0.0, 12, 2, reclaimable=False)
    assert (nowhere.queue, nowhere.known, nowhere.pending_gpus) == ("nowhere", False, 2)
    assert ls.starved and not be.starved


def test_a_gated_plan_has_no_standing() -> None:
    world = contested_world()
    world.quality = DataQuality(metrics_at=None)
    assert world.plan().queues == ()
