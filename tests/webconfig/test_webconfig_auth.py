"""Basic auth: header parsing, bcrypt through the `bcrypt` package, the verdict caches, the
stand-in hash of unknown users, the bounded queue."""

from __future__ import annotations

import asyncio
import base64

import pytest
from webfixtures import bcrypt_hash

from webconfig.auth import (
    BasicAuth,
    Outcome,
    bcrypt_cost,
    bcrypt_matches,
    parse_basic_authorization,
    stand_in_cost,
)


def basic(user: str, password: str) -> str:
    return "Basic " + base64.b64encode(f"{user}:{password}".encode()).decode()


@pytest.mark.parametrize(
    ("header", "expected"),
    [
        (basic("alice", "pw"), ("alice", "pw")),
        (basic("alice", "p:w:"), ("alice", "p:w:")),  # only the first colon splits
        (basic("alice", ""), ("alice", "")),
        ("basic " + base64.b64encode(b"a:b").decode(), ("a", "b")),  # the scheme is case-blind
        (basic("j\u00fcrgen", "\u00fc"), ("j\u00fcrgen", "\u00fc")),
        (None, None),
        ("", None),
        ("Bearer abc", None),
        ("Basic", None),
        ("Basic !!!", None),
        ("Basic " + base64.b64encode(b"no-colon").decode(), None),
        ("Basic " + base64.b64encode(b"\xff\xfe:x").decode(), None),
    ],
    ids=[
        "plain",
        "colons-in-password",
        "empty-password",
        "lowercase-scheme",
        "utf8",
        "absent",
        "empty",
        "bearer",
        "no-token",
        "not-base64",
        "no-colon",
        "not-utf8",
    ],
)
def test_parse_basic_authorization(header: str | None, expected: tuple[str, str] | None) -> None:
    assert parse_basic_authorization(header) == expected


def test_bcrypt_matches_uses_the_hash_and_refuses_what_it_cannot_check() -> None:
    hashed = bcrypt_hash("right")
    assert bcrypt_matches("right", hashed)
    assert not bcrypt_matches("wrong", hashed)
    assert not bcrypt_matches("x" * 100, hashed)  # bcrypt 5 raises on > 72 bytes: a refusal
    assert not bcrypt_matches("right", "$2y$10$short")


async def test_a_success_is_cached_and_so_is_a_failure_but_every_new_guess_pays() -> None:
    auth = BasicAuth()
    users = {"prometheus": bcrypt_hash("pw")}
    assert await auth.check(users, basic("prometheus", "pw")) is Outcome.ALLOWED
    assert await auth.check(users, basic("prometheus", "pw")) is Outcome.ALLOWED
    assert auth.bcrypt_checks == 1
    for guess in ("old-pw", "old-pw", "guess", "old-pw"):
        assert await auth.check(users, basic("prometheus", guess)) is Outcome.DENIED
    assert auth.bcrypt_checks == 3  # the old password paid once; a new guess pays again


async def test_a_changed_hash_misses_the_cache() -> None:
    auth = BasicAuth()
    assert await auth.check({"p": bcrypt_hash("old")}, basic("p", "old")) is Outcome.ALLOWED
    assert await auth.check({"p": bcrypt_hash("new")}, basic("p", "old")) is Outcome.DENIED
    assert await auth.check({"p": bcrypt_hash("new")}, basic("p", "new")) is Outcome.ALLOWED
    assert auth.bcrypt_checks == 3


async def test_an_unknown_user_pays_bcrypt_like_a_known_one() -> None:
    seen: list[tuple[str, str]] = []

    def matches(password: str, hashed: str) -> bool:
        seen.append((password, hashed))
        return True  # even a "match" against the stand-in hash must not let a stranger in

    auth = BasicAuth(matches=matches)
    users = {"alice": bcrypt_hash("pw")}
    assert await auth.check(users, basic("mallory", "pw")) is Outcome.DENIED
    assert await auth.check(users, basic("mallory", "pw2")) is Outcome.DENIED
    assert len(seen) == 2 and seen[0][1] not in users.values()


def fake_hash(cost: int) -> str:
    """A well-formed bcrypt hash string at `cost` (never checked: `matches` is injected)."""
    return f"$2y${cost:02d}$" + "a" * 53


@pytest.mark.parametrize(
    ("costs", "expected"),
    [
        pytest.param([5], 5, id="htpasswd-nB-cost-5"),
        pytest.param([12, 12], 12, id="make-secrets-cost-12"),
        pytest.param([5, 12, 10], 12, id="mixed-costs-the-highest"),
    ],
)
async def test_an_unknown_users_stand_in_hash_has_the_configured_users_cost(
    costs: list[int], expected: int
) -> None:
    """Structural: equal cost is equal bcrypt work (bench/auth_timing_bench.py measures it)."""
    seen: list[str] = []

    def matches(_password: str, hashed: str) -> bool:
        seen.append(hashed)
        return False

    users = {f"user{i}": fake_hash(cost) for i, cost in enumerate(costs)}
    auth = BasicAuth(matches=matches)
    assert await auth.check(users, basic("user0", "guess")) is Outcome.DENIED
    assert await auth.check(users, basic("nobody", "guess")) is Outcome.DENIED
    known, unknown = seen
    assert bcrypt_cost(known) == costs[0] and bcrypt_cost(unknown) == expected
    assert bcrypt_matches("guess", unknown) is False  # a real bcrypt hash that matches nothing


@pytest.mark.parametrize(
    ("users", "expected"),
    [
        ({}, 10),
        ({"a": "not-a-hash"}, 10),
        ({"a": fake_hash(4), "b": "$2a$07$" + "b" * 53}, 7),
    ],
    ids=["no-users", "unparsable-hash-default", "2a-prefix-counts"],
)
def test_stand_in_cost(users: dict[str, str], expected: int) -> None:
    assert stand_in_cost(users) == expected


async def test_the_cache_is_bounded_and_keeps_no_password() -> None:
    auth = BasicAuth(cache_size=2)
    users = {name: bcrypt_hash(name + "-pw") for name in ("a", "b", "c")}
    for name in ("a", "b", "c"):
        assert await auth.check(users, basic(name, name + "-pw")) is Outcome.ALLOWED
    assert len(auth._cache) == 2
    assert all(b"-pw" not in key for key in auth._cache)
    assert (
        await auth.check(users, basic("a", "a-pw")) is Outcome.ALLOWED
    )  # evicted, so checked again
    assert auth.bcrypt_checks == 4


async def test_no_credentials_never_reach_bcrypt() -> None:
    auth = BasicAuth()
    assert await auth.check({"a": bcrypt_hash("pw")}, None) is Outcome.DENIED
    assert await auth.check({"a": bcrypt_hash("pw")}, "Bearer token") is Outcome.DENIED
    assert auth.bcrypt_checks == 0


async def test_a_flood_of_checks_beyond_the_queue_is_busy_not_parked() -> None:
    release = asyncio.Event()
    loop = asyncio.get_running_loop()

    def matches(password: str, hashed: str) -> bool:
        asyncio.run_coroutine_threadsafe(release.wait(), loop).result()
        return False

    auth = BasicAuth(max_queued=2, matches=matches)
    users = {"p": bcrypt_hash("pw")}
    queued = [asyncio.create_task(auth.check(users, basic("p", f"guess{i}"))) for i in range(2)]
    await asyncio.sleep(0)  # both tasks run to their first await: one checking, one queued
    assert await auth.check(users, basic("p", "one-more")) is Outcome.BUSY
    release.set()
    assert [await task for task in queued] == [Outcome.DENIED, Outcome.DENIED]
    assert auth.bcrypt_checks == 2
