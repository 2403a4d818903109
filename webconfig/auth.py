"""HTTP basic auth against the bcrypt hashes of `basic_auth_users`, as exporter-toolkit does it.

bcrypt is slow on purpose (cost 10 is ~70 ms of CPU), so:
- a successful check is cached, keyed by a SHA-256 of (user, stored hash, password): the cache holds
  no password, a changed hash in the file misses it at once, and a scrape every few seconds pays
  bcrypt once. Failures are not cached, so a wrong guess always pays the full price;
- checks run in a worker thread (bcrypt releases the GIL), one at a time, so a flood of wrong
  passwords costs at most one core and never stalls the event loop that serves other scrapes;
- at most `max_queued` checks wait for that thread; beyond, the answer is BUSY (503) at once.
  Otherwise a flood of wrong passwords would park every connection slot in the queue for seconds
  and lock out scrapers, whose cached credentials need no bcrypt at all;
- an unknown user is checked against a fixed hash, so timing does not tell which users exist.
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import hashlib
import json
from collections import OrderedDict
from collections.abc import Callable, Mapping
from enum import StrEnum

import bcrypt

# bcrypt of a random string nobody kept (cost 10, like htpasswd -B): it matches no password.
_UNKNOWN_USER_HASH = "$2b$10$8X3721ziDzal/JWjnBk6q.VWa4EIcIXqZsTneYymQ7d1DoGAexGAW"


def parse_basic_authorization(header: str | None) -> tuple[str, str] | None:
    """`Basic base64(user:password)` -> (user, password); None for anything else (RFC 7617)."""
    if not header:
        return None
    scheme, _, token = header.strip().partition(" ")
    if scheme.lower() != "basic":
        return None
    try:
        decoded = base64.b64decode(token.strip(), validate=True).decode("utf-8")
    except (binascii.Error, UnicodeDecodeError, ValueError):
        return None
    user, colon, password = decoded.partition(":")
    return (user, password) if colon else None


def bcrypt_matches(password: str, hashed: str) -> bool:
    try:
        return bcrypt.checkpw(password.encode("utf-8"), hashed.encode("ascii"))
    except ValueError:  # bcrypt >= 5 refuses passwords over 72 bytes; also a malformed hash
        return False


class Outcome(StrEnum):
    ALLOWED = "allowed"
    DENIED = "denied"
    BUSY = "busy"  # too many checks already waiting for bcrypt: not checked


class BasicAuth:
    """Checks `Authorization` headers against a user -> bcrypt hash map (given per call, so a
    reloaded config applies at once). One instance per server: it owns the cache and the lock."""

    def __init__(
        self,
        *,
        cache_size: int = 100,
        max_queued: int = 8,
        matches: Callable[[str, str], bool] = bcrypt_matches,
    ) -> None:
        self._cache: OrderedDict[bytes, None] = OrderedDict()
        self._cache_size = cache_size
        self._matches = matches
        self._lock = asyncio.Lock()
        self._max_queued = max_queued
        self._queued = 0
        self.bcrypt_checks = 0  # how many checks paid bcrypt's cost (tests pin the cache with it)

    async def check(self, users: Mapping[str, str], header: str | None) -> Outcome:
        credentials = parse_basic_authorization(header)
        if credentials is None:
            return Outcome.DENIED
        user, password = credentials
        hashed = users.get(user)
        key = hashlib.sha256(json.dumps([user, hashed, password]).encode("utf-8")).digest()
        if hashed is not None and key in self._cache:
            self._cache.move_to_end(key)
            return Outcome.ALLOWED
        if self._queued >= self._max_queued:
            return Outcome.BUSY
        self._queued += 1
        try:
            async with self._lock:
                self.bcrypt_checks += 1
                stored = hashed or _UNKNOWN_USER_HASH
                ok = await asyncio.to_thread(self._matches, password, stored)
        finally:
            self._queued -= 1
        if not ok or hashed is None:
            return Outcome.DENIED
        self._cache[key] = None
        if len(self._cache) > self._cache_size:
            self._cache.popitem(last=False)
        return Outcome.ALLOWED
