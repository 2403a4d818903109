"""Does the time a wrong password takes tell a valid user name from an unknown one?

Usage: PYTHONPATH=. python bench/auth_timing_bench.py [--rounds 15] [--costs 5,12] [--reload 12,5]

For each cost (htpasswd -nB writes 5, make-secrets.sh 12) a user is hashed at that cost, and
`BasicAuth.check` answers, interleaved, a wrong password for that user and a password for an
unknown user, every guess new (so neither verdict cache helps). The stand-in hash is made before
timing starts, as it is once per process. Reported per cost: the fastest of each (the run least
disturbed by other jobs on a shared machine) and their ratio (unknown / known; 1.0 means the
names cannot be told apart by timing), next to the same ratio against the old fixed cost-10
stand-in (bcrypt of the unknown user's guess against a cost-10 hash, timed the same way).

`--reload FROM,TO` (`reload_12_to_5` in the output): a web config file whose user is hashed at
cost FROM is read by `LiveWebConfig`, every guess is sent once (denied, and cached as denied),
the file is replaced by one hashed at cost TO (as `htpasswd -nB` writes cost 5 over
`make-secrets.sh`'s 12), and the same guesses are sent again, timed: the ratio says whether a
client replaying its guesses after a reload can tell the configured name from unknown ones.
Prints one JSON object. About 30 seconds at the defaults.
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import json
import os
import tempfile
import time
from collections.abc import Mapping
from pathlib import Path

import bcrypt

from webconfig.auth import BasicAuth, Outcome, bcrypt_matches
from webconfig.live import LiveWebConfig

OLD_STAND_IN_COST = 10


def header(user: str, password: str) -> str:
    return "Basic " + base64.b64encode(f"{user}:{password}".encode()).decode()


async def timed_check(auth: BasicAuth, users: Mapping[str, str], user: str, password: str) -> float:
    started = time.perf_counter()
    outcome = await auth.check(users, header(user, password))
    elapsed = time.perf_counter() - started
    assert outcome is Outcome.DENIED
    return elapsed


async def measure(cost: int, rounds: int) -> dict[str, float]:
    users = {"prometheus": bcrypt.hashpw(b"the-password", bcrypt.gensalt(cost)).decode()}
    old_stand_in = bcrypt.hashpw(b"nobody", bcrypt.gensalt(OLD_STAND_IN_COST)).decode()
    auth = BasicAuth()
    await auth.check(users, header("warm-up", "x"))  # makes the stand-in, as the first check does
    known: list[float] = []
    unknown: list[float] = []
    old_unknown: list[float] = []
    for i in range(rounds):
        pair = [(known, "prometheus"), (unknown, f"nobody-{i}")]
        for times, user in pair if i % 2 else pair[::-1]:  # alternate which goes first
            times.append(await timed_check(auth, users, user, f"wrong-{i}"))
        started = time.perf_counter()
        bcrypt_matches(f"wrong-{i}", old_stand_in)
        old_unknown.append(time.perf_counter() - started)
    k, u, o = (min(x) for x in (known, unknown, old_unknown))  # min: least disturbed
    return {
        "known_user_s": round(k, 4),
        "unknown_user_s": round(u, 4),
        "ratio": round(u / k, 2),
        "old_fixed_cost10_unknown_s": round(o, 4),
        "old_ratio": round(o / k, 2),
    }


def write_users_file(path: Path, cost: int) -> None:
    """The user `prometheus` hashed at `cost`, written then renamed (as a Secret volume swaps)."""
    hashed = bcrypt.hashpw(b"the-password", bcrypt.gensalt(cost)).decode()
    temporary = path.with_name(path.name + ".tmp")
    temporary.write_text(f"basic_auth_users:\n  prometheus: '{hashed}'\n", encoding="utf-8")
    os.replace(temporary, path)


async def measure_reload(before: int, after: int, rounds: int) -> dict[str, float]:
    """Every guess sent once at cost `before`, then replayed after a reload to cost `after`."""
    now = [0.0]
    with tempfile.TemporaryDirectory() as directory:
        path = Path(directory) / "web-config.yml"
        write_users_file(path, before)
        live = LiveWebConfig(path, clock=lambda: now[0])
        auth = BasicAuth()
        guesses = [
            (user, f"wrong-{i}") for i in range(rounds) for user in ("prometheus", f"nobody-{i}")
        ]
        users = live.current().config.basic_auth_users
        for user, password in guesses:
            await timed_check(auth, users, user, password)
        write_users_file(path, after)
        now[0] += 3600.0  # past the check interval: the next current() re-reads the file
        users = live.current().config.basic_auth_users
        assert users["prometheus"].startswith(f"$2b${after:02d}$"), "the reload was not applied"
        await auth.check(users, header("warm-up", "x"))  # the stand-in at the new cost
        known: list[float] = []
        unknown: list[float] = []
        for i in range(rounds):
            pair = [(known, "prometheus"), (unknown, f"nobody-{i}")]
            for times, user in pair if i % 2 else pair[::-1]:
                times.append(await timed_check(auth, users, user, f"wrong-{i}"))
    k, u = min(known), min(unknown)
    # Six decimals: a verdict answered from the cache takes microseconds.
    return {"known_user_s": round(k, 6), "unknown_user_s": round(u, 6), "ratio": round(u / k, 3)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=15)
    parser.add_argument("--costs", default="5,12")
    parser.add_argument("--reload", default="12,5", help="FROM,TO costs; empty: no reload case")
    args = parser.parse_args()
    costs = [int(c) for c in args.costs.split(",") if c]
    results = {f"cost_{c}": asyncio.run(measure(c, args.rounds)) for c in costs}
    if args.reload:
        before, after = (int(c) for c in args.reload.split(","))
        name = f"reload_{before}_to_{after}"
        results[name] = asyncio.run(measure_reload(before, after, args.rounds))
    print(json.dumps(results, indent=1))


if __name__ == "__main__":
    main()
