"""Whether the control loop is alive, for `/healthz` (the kubelet's livenessProbe).

A live loop finishes a cycle (any result: success, skipped or error) at least once per bound:
the wait between cycles (`--interval`), the reads, which end at their deadline
(`--cycle-timeout`), and as long again for the actions in flight, which are never cut short.
A loop past that bound is stuck (a thread wedged, an answer stalled before its headers, an event
loop blocked): `/healthz` then answers 503 saying for how long, so the kubelet restarts the
container. `/healthz` stays 200 through skipped and failed cycles: Prometheus or the API server
being down is not cured by a restart, and `/readyz` and the metrics say so. Time is injected.
"""

from __future__ import annotations

from collections.abc import Callable


def liveness_bound(interval: float, cycle_timeout: float) -> float:
    """Pure: the longest a live loop goes without finishing a cycle (see the docstring)."""
    return interval + 2 * cycle_timeout


class Liveness:
    """`beat()` after every cycle; `problem()` is why the loop is not alive, or None."""

    def __init__(self, bound: float, monotonic: Callable[[], float]) -> None:
        self.bound = bound
        self._monotonic = monotonic
        self._last = monotonic()  # the loop's start counts as a beat: the first cycle has a bound

    def beat(self) -> None:
        self._last = self._monotonic()

    def problem(self) -> str | None:
        quiet = self._monotonic() - self._last
        if quiet <= self.bound:
            return None
        return (
            f"no cycle finished for {quiet:.0f}s, more than the bound of {self.bound:g}s "
            "(--interval + 2 x --cycle-timeout): the control loop is stuck"
        )
