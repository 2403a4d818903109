"""Who gets the bcrypt thread next: a bounded queue, fair across client addresses.

A password nobody has cached yet (a new Prometheus replica, a rotated password, any scraper after
a restart) looks exactly like an attacker's guess until bcrypt has checked it, so no rule can
let the right one jump the queue. What a queue can do is make sure a flood cannot keep it out:

- Checks run one at a time (bcrypt is slow on purpose: one core at most goes to it).
- Waiting checks are grouped by client address and served round-robin across addresses: a
  scraper at another address than the flood waits for at most one check per flooding address.
  Within one address they are served in arrival order, so a scraper sharing the flood's address
  (behind the same NAT, or on loopback) waits behind the flood's checks already queued, never
  behind later ones: with a 20-connection flood, at most 20 checks.
- At most `capacity` checks wait (each holds a connection slot while it waits). When the queue
  is full, a newcomer from an address with fewer waiting checks than the busiest address takes the
  place of that address's newest waiter, which is answered BUSY; otherwise the newcomer is.
  So a flood from one address can fill the queue only while nobody else wants in.

`Admission` is used by one event loop; nothing here blocks.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections import OrderedDict, deque
from collections.abc import AsyncIterator


class Admission:
    """Turns at the bcrypt thread; see the module docstring."""

    def __init__(self, capacity: int) -> None:
        if capacity < 1:
            raise ValueError(f"capacity must be >= 1, got {capacity}")
        self.capacity = capacity
        self._waiting: OrderedDict[str, deque[asyncio.Future[bool]]] = OrderedDict()
        self._running = False

    @property
    def waiting(self) -> int:
        return sum(len(q) for q in self._waiting.values())

    @contextlib.asynccontextmanager
    async def turn(self, client: str) -> AsyncIterator[bool]:
        """Yields True once it is `client`'s turn (the thread is ours until the block ends), or
        False at once / later when the queue has no room for it (answer BUSY)."""
        granted = await self._wait(client)
        try:
            yield granted
        finally:
            if granted:
                self._hand_on()

    async def _wait(self, client: str) -> bool:
        if not self._running and not self._waiting:
            self._running = True
            return True
        if self.waiting >= self.capacity and not self._make_room(client):
            return False
        future: asyncio.Future[bool] = asyncio.get_running_loop().create_future()
        self._waiting.setdefault(client, deque()).append(future)
        try:
            return await future
        except asyncio.CancelledError:
            if future.done() and not future.cancelled() and future.result():
                self._hand_on()  # granted just as it was cancelled: pass the turn on
            else:
                self._forget(client, future)
            raise

    def _make_room(self, client: str) -> bool:
        """Answer BUSY to the newest waiter of the busiest address, if that address has more
        waiting than `client` would have with its newcomer; True when room was made."""
        mine = len(self._waiting.get(client, ()))
        busiest = max(self._waiting, key=lambda c: len(self._waiting[c]))
        if len(self._waiting[busiest]) <= mine + 1:
            return False
        queue = self._waiting[busiest]
        queue.pop().set_result(False)
        return True

    def _forget(self, client: str, future: asyncio.Future[bool]) -> None:
        queue = self._waiting.get(client)
        if queue is not None and future in queue:
            queue.remove(future)
            if not queue:
                del self._waiting[client]

    def _hand_on(self) -> None:
        """The thread is free: give it to the next address in turn, else mark it idle."""
        while self._waiting:
            client, queue = next(iter(self._waiting.items()))
            future = queue.popleft()
            if queue:
                self._waiting.move_to_end(client)  # round-robin: this address goes last
            else:
                del self._waiting[client]
            if not future.done():
                future.set_result(True)
                return
        self._running = False
