"""After the web config is reloaded, an unknown user's answer costs what a configured user's does.

A client that sent guesses before a reload and replays them after it must find every name
checked again, or none: if the configured names paid bcrypt again while the unknown ones were
denied from the cache, the difference in time (a bcrypt check against a cache look-up) would
tell which names exist. The cost each answer paid is read from the hashes bcrypt was asked to
check (its cost prefix, `$2y$05$`), never from a clock.
"""

from __future__ import annotations

import base64
from pathlib import Path

import bcrypt
import pytest
from webfixtures import Clock, fetch, running, write_atomically

from webconfig.auth import BasicAuth, Outcome, bcrypt_cost
from webconfig.live import LiveWebConfig


def basic(user: str, password: str) -> str:
    return "Basic " + base64.b64encode(f"{user}:{password}".encode()).decode()


def fake_hash(cost: int, fill: str = "a") -> str:
    """A well-formed bcrypt hash string at `cost` (never checked: `matches` is injected)."""
    return f"$2y${cost:02d}$" + fill * 53


def htpasswd_hash(password: str, cost: int) -> str:
    """A real bcrypt hash as `htpasswd -nB -C cost` writes it (`$2y$`)."""
    return "$2y$" + bcrypt.hashpw(password.encode(), bcrypt.gensalt(cost)).decode()[4:]


EVERY_NAME = ("a", "b", "nobody")


@pytest.mark.parametrize(
    ("before", "after", "paid"),
    [
        pytest.param(
            {"a": fake_hash(12), "b": fake_hash(12, "b")},
            {"a": fake_hash(5), "b": fake_hash(5, "b")},
            [5],
            id="costs-12-to-5",
        ),
        pytest.param(
            {"a": fake_hash(12), "b": fake_hash(12, "b")},
            {"a": fake_hash(12, "c"), "b": fake_hash(12, "b")},
            [12],
            id="one-of-two-rotated",
        ),
        pytest.param(
            {"a": fake_hash(12), "b": fake_hash(12, "b")},
            {"a": fake_hash(12), "b": fake_hash(12, "b")},
            [],
            id="users-unchanged",
        ),
    ],
)
async def test_a_reload_drops_every_names_cached_denial_alike(
    before: dict[str, str], after: dict[str, str], paid: list[int]
) -> None:
    """A guess denied before the reload, replayed after it: the bcrypt costs each answer paid."""
    checked: list[int | None] = []

    def matches(_password: str, hashed: str) -> bool:
        checked.append(bcrypt_cost(hashed))
        return False

    auth = BasicAuth(matches=matches)
    for name in EVERY_NAME:
        assert await auth.check(before, basic(name, "guess")) is Outcome.DENIED
    replayed = {}
    for name in EVERY_NAME:
        start = len(checked)
        assert await auth.check(after, basic(name, "guess")) is Outcome.DENIED
        replayed[name] = checked[start:]
    assert replayed == {name: paid for name in EVERY_NAME}


async def test_after_a_reload_from_cost_12_to_5_every_name_pays_cost_5(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Through the real server and a real file reload, as `htpasswd -nB` (cost 5) would replace
    a `make-secrets.sh` (cost 12) hash: the cost of each `bcrypt.checkpw` a request caused."""
    checked: list[int | None] = []
    checkpw = bcrypt.checkpw

    def recording_checkpw(password: bytes, hashed: bytes) -> bool:
        checked.append(bcrypt_cost(hashed.decode("ascii")))
        return checkpw(password, hashed)

    monkeypatch.setattr(bcrypt, "checkpw", recording_checkpw)
    clock = Clock()
    path = tmp_path / "web-config.yml"
    write_atomically(path, f"basic_auth_users:\n  prometheus: '{htpasswd_hash('pw', 12)}'\n")
    async with running(LiveWebConfig(path, clock=clock)) as server:
        url = f"http://127.0.0.1:{server.port}/metrics"

        async def costs_paid(user: str) -> list[int | None]:
            start = len(checked)
            assert (await fetch(url, auth=(user, "guess"))).status == 401
            return checked[start:]

        assert [await costs_paid(user) for user in ("prometheus", "nobody")] == [[12], [12]]
        write_atomically(path, f"basic_auth_users:\n  prometheus: '{htpasswd_hash('pw', 5)}'\n")
        clock.advance()
        assert [await costs_paid(user) for user in ("prometheus", "nobody")] == [[5], [5]]
