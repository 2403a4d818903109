"""The connection cap: who holds a slot, and who gives one up when a new connection arrives.

A slot is taken at accept and kept until the connection is gone. Connections are either *pending*
(TLS handshake or request head not yet complete: nothing has shown it is a real client) or
*active* (a complete head handed to aiohttp). At the cap, a new connection takes the slot of the
oldest pending one, which is closed; only when every slot is active is the new one refused. A flood
of half-open or half-sent connections therefore cannot lock a scraper out: the scraper's own
connection displaces the oldest of them and sends its head within milliseconds. Counters are kept
for the servers' metrics.
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import Protocol


class Evictable(Protocol):
    def evict(self) -> None:
        """Close the connection now; `Slots.release` will be called for it."""


@dataclass(frozen=True)
class ConnectionCounts:
    """Totals since start, and what is held now (a snapshot)."""

    accepted: int = 0
    refused_at_cap: int = 0  # closed at once: every slot was serving a request
    evicted: int = 0  # pending connections closed to make room for a new one
    header_timeouts: int = 0  # handshake and head not complete within header_timeout
    request_timeouts: int = 0  # complete head, but not done within request_timeout
    malformed: int = 0  # answered 400/501 by the guard
    too_large: int = 0  # answered 431 by the guard
    tls_failures: int = 0  # handshakes that failed (plain HTTP on the TLS port, bad certificates)
    pending: int = 0
    active: int = 0


_TOTALS = tuple(f.name for f in fields(ConnectionCounts) if f.name not in ("pending", "active"))


class Slots:
    def __init__(self, max_connections: int) -> None:
        self._max = max_connections
        self._pending: dict[Evictable, None] = {}  # insertion order = accept order
        self._active: set[Evictable] = set()
        # Totals by ConnectionCounts field name; the guard adds to the ones it decides.
        self.counts: dict[str, int] = dict.fromkeys(_TOTALS, 0)

    def admit(self, connection: Evictable) -> bool:
        """Give `connection` a slot (evicting the oldest pending one at the cap), or refuse it."""
        if len(self._pending) + len(self._active) >= self._max:
            if not self._pending:
                self.counts["refused_at_cap"] += 1
                return False
            oldest = next(iter(self._pending))
            self.release(oldest)
            self.counts["evicted"] += 1
            oldest.evict()
        self._pending[connection] = None
        self.counts["accepted"] += 1
        return True

    def activate(self, connection: Evictable) -> None:
        if self._pending.pop(connection, 0) is None:
            self._active.add(connection)

    def release(self, connection: Evictable) -> None:
        """Free the slot; idempotent, since a connection can end along several paths at once."""
        self._pending.pop(connection, None)
        self._active.discard(connection)

    def pending(self) -> list[Evictable]:
        return list(self._pending)

    def active(self) -> list[Evictable]:
        return list(self._active)

    def snapshot(self) -> ConnectionCounts:
        return ConnectionCounts(**self.counts, pending=len(self._pending), active=len(self._active))
