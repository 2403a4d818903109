"""Leader election for the control loop: renew a Lease in the background, act only while held.

The lease itself (a `coordination.k8s.io/v1` Lease: acquire, renew, release) is `reclaimer.kube`'s
business; this module only decides *when*. A background task tries to acquire or renew every
`retry_period` seconds. `is_leader()` is true only while the last successful renew is younger
than `renew_deadline`, which is shorter than the lease duration: a replica cut off from the API
server stops acting before another one can take the lease over. Every replica keeps planning
(`/plan` stays useful on standbys); the controller and the actuator ask `is_leader()` before
writing. On stop, the cycle in flight finishes, the renew task ends, and a held lease is released.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable
from typing import Protocol

log = logging.getLogger("gpu_reclaimer.leadership")


class Lease(Protocol):
    def try_acquire_or_renew(self, now: float) -> bool: ...

    def release(self) -> None: ...


class Runnable(Protocol):
    async def run(self, interval: float, stop: asyncio.Event) -> None: ...


class Leadership:
    def __init__(
        self,
        lease: Lease,
        clock: Callable[[], float],
        renew_deadline: float = 10.0,
        retry_period: float = 2.0,
    ) -> None:
        self._lease = lease
        self._clock = clock
        self.renew_deadline = renew_deadline
        self.retry_period = retry_period
        self._renewed_at: float | None = None

    def is_leader(self) -> bool:
        at = self._renewed_at
        return at is not None and self._clock() - at < self.renew_deadline

    async def keep_renewing(self, stop: asyncio.Event) -> None:
        while not stop.is_set():
            now = self._clock()
            try:
                held = await asyncio.to_thread(self._lease.try_acquire_or_renew, now)
            except Exception:  # an API hiccup: keep the old renew time, the deadline decides
                log.exception("lease renew failed")
            else:
                was = self.is_leader()
                self._renewed_at = now if held else None
                if held != was:
                    log.info("leadership %s", "acquired" if held else "lost")
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(stop.wait(), timeout=self.retry_period)

    async def run(self, controller: Runnable, interval: float, stop: asyncio.Event) -> None:
        renewer = asyncio.create_task(self.keep_renewing(stop))
        try:
            await controller.run(interval, stop)
        finally:
            stop.set()
            await renewer
            if self._renewed_at is not None:
                self._renewed_at = None
                try:
                    await asyncio.to_thread(self._lease.release)
                    log.info("lease released")
                except Exception:
                    log.exception("lease release failed; it expires on its own")
