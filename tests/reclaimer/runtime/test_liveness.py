"""`Liveness`: alive while a cycle finished within the bound, stuck after, alive again at once."""

from __future__ import annotations

from reclaimer.runtime.liveness import Liveness, liveness_bound


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_the_bound_counts_from_the_start_and_from_each_finished_cycle() -> None:
    clock = Clock()
    live = Liveness(liveness_bound(60, 300), clock)
    assert live.bound == 660
    clock.now += 660
    assert live.problem() is None  # a long first cycle is still within the bound
    clock.now += 1
    stuck = live.problem()
    assert stuck is not None and "no cycle finished for 661s" in stuck
    live.beat()
    assert live.problem() is None
