"""Basic auth: header parsing, bcrypt through the `bcrypt` package, the success-only cache."""

from __future__ import annotations

import asyncio
import base64

import pytest
from webfixtures import bcrypt_hash

from webconfig.auth import BasicAuth, Outcome, bcrypt_matches, parse_basic_authorization


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


async def test_a_success_is_cached_and_a_failure_is_not() -> None:
    auth = BasicAuth()
    users = {"prometheus": bcrypt_hash("pw")}
    assert await auth.check(users, basic("prometheus", "pw")) is Outcome.ALLOWED
    assert await auth.check(users, basic("prometheus", "pw")) is Outcome.ALLOWED
    assert auth.bcrypt_checks == 1
    for _ in range(2):
        assert await auth.check(users, basic("prometheus", "guess")) is Outcome.DENIED
    assert auth.bcrypt_checks == 3  # every wrong guess pays bcrypt


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
    assert await auth.check({"alice": bcrypt_hash("pw")}, basic("mallory", "pw")) is Outcome.DENIED
    assert await auth.check({"alice": bcrypt_hash("pw")}, basic("mallory", "pw")) is Outcome.DENIED
    assert len(seen) == 2 and seen[0][1].startswith("$2b$10$")


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
