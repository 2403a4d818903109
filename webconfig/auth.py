"""HTTP basic auth against the bcrypt hashes of `basic_auth_users`, as exporter-toolkit does it.

bcrypt is slow on purpose (cost 10 is ~70 ms of CPU, cost 12 four times that), so:
- a successful check is cached, keyed by a SHA-256 of (every configured user and hash, user,
  password): the cache holds no password and a scrape every few seconds pays bcrypt once. A
  failure is cached the same way: the same wrong password is denied again without bcrypt while
  the users' hashes stay as they are (bcrypt is deterministic, so the answer cannot change; an
  attacker learns nothing from it, and every *new* guess still pays the full price). A client
  that keeps sending an old password after a rotation then costs nothing and blocks nobody;
- the key holds the whole users map, not only the named user's hash, so a reload that changes
  any hash drops every name's cached verdicts alike, configured or not: a guess replayed after
  it pays bcrypt whichever name it is for. Keyed by the named user's hash alone, as
  exporter-toolkit keys it (prometheus/exporter-toolkit web/handler.go, with one fixed hash for
  every unknown user), a rotation would re-check only the rotated users' guesses and answer the
  unknown names' from the cache, and the difference in time would tell which names exist;
- checks run in a worker thread (bcrypt releases the GIL), one at a time, so a flood of wrong
  passwords costs at most one core and never stalls the event loop that serves other scrapes;
- the checks waiting for that thread are admitted by `admission.Admission` (at most `max_queued`
  wait, fair across client addresses; beyond, BUSY, 503): a flood of new wrong passwords delays a
  right password that is not cached yet, but cannot keep it out;
- an unknown user is checked against a stand-in hash with the same bcrypt cost as the configured
  users' hashes (the highest, when they differ), so the time an answer takes does not tell which
  user names exist, whatever cost `htpasswd -nB` (5) or `make-secrets.sh` (12) wrote. The cost
  is read from the users in force at each check, so it follows every reload; a stand-in is made
  once per cost, on the first check at that cost, whichever user it names.
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import hashlib
import json
import re
import secrets
from collections import OrderedDict
from collections.abc import Callable, Mapping
from enum import StrEnum

import bcrypt

from webconfig.admission import Admission

DEFAULT_COST = 10  # for a stand-in when no configured hash says its cost (not a bcrypt hash)
_COST = re.compile(r"\$2[aby]\$(\d\d)\$")


def bcrypt_cost(hashed: str) -> int | None:
    """The cost of a `$2a$`/`$2b$`/`$2y$` hash, or None when it is not one."""
    match = _COST.match(hashed)
    return int(match.group(1)) if match else None


def stand_in_cost(users: Mapping[str, str]) -> int:
    """Pure: the cost an unknown user's check must pay, the highest of the configured hashes'."""
    costs = [c for c in map(bcrypt_cost, users.values()) if c is not None]
    return max(costs, default=DEFAULT_COST)


def make_stand_in(cost: int) -> str:
    """A bcrypt hash of a random secret nobody keeps, at `cost`: it matches no password."""
    return bcrypt.hashpw(secrets.token_bytes(32), bcrypt.gensalt(cost)).decode("ascii")


def verdict_key(users: Mapping[str, str], user: str, password: str) -> bytes:
    """Pure: the cache key of a verdict on (user, password) under `users` (see the module doc)."""
    configured = sorted(users.items())
    return hashlib.sha256(json.dumps([configured, user, password]).encode("utf-8")).digest()


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
    reloaded config applies at once). One instance per server: it owns the caches and the queue."""

    def __init__(
        self,
        *,
        cache_size: int = 100,
        denied_size: int = 1024,
        max_queued: int = 32,
        matches: Callable[[str, str], bool] = bcrypt_matches,
    ) -> None:
        self._cache: OrderedDict[bytes, None] = OrderedDict()
        self._denied: OrderedDict[bytes, None] = OrderedDict()
        self._cache_size = cache_size
        self._denied_size = denied_size
        self._matches = matches
        self._admission = Admission(max_queued)
        self._stand_ins: dict[int, str] = {}  # cost -> stand-in hash for unknown users
        self.bcrypt_checks = 0  # how many checks paid bcrypt's cost (tests pin the cache with it)

    async def check(
        self, users: Mapping[str, str], header: str | None, client: str = ""
    ) -> Outcome:
        """The verdict on `header`; `client` (the peer address) only decides whose turn is next."""
        credentials = parse_basic_authorization(header)
        if credentials is None:
            return Outcome.DENIED
        user, password = credentials
        hashed = users.get(user)
        key = verdict_key(users, user, password)
        if hashed is not None and _touch(self._cache, key):
            return Outcome.ALLOWED
        if _touch(self._denied, key):
            return Outcome.DENIED
        async with self._admission.turn(client) as granted:
            if not granted:
                return Outcome.BUSY
            # Made (once per cost) whichever user this is, so the first check of each pays alike.
            stand_in = await self._stand_in(stand_in_cost(users))
            stored = hashed or stand_in
            self.bcrypt_checks += 1
            ok = await asyncio.to_thread(self._matches, password, stored)
        if not ok or hashed is None:
            _remember(self._denied, key, self._denied_size)
            return Outcome.DENIED
        _remember(self._cache, key, self._cache_size)
        return Outcome.ALLOWED

    async def _stand_in(self, cost: int) -> str:
        stand_in = self._stand_ins.get(cost)
        if stand_in is None:
            stand_in = self._stand_ins[cost] = await asyncio.to_thread(make_stand_in, cost)
        return stand_in


def _touch(cache: OrderedDict[bytes, None], key: bytes) -> bool:
    if key not in cache:
        return False
    cache.move_to_end(key)
    return True


def _remember(cache: OrderedDict[bytes, None], key: bytes, size: int) -> None:
    cache[key] = None
    if len(cache) > size:
        cache.popitem(last=False)
