"""Does the time a wrong password takes tell a valid user name from an unknown one?

Usage: PYTHONPATH=. python bench/auth_timing_bench.py [--rounds 15] [--costs 5,12]

For each cost (htpasswd -nB writes 5, make-secrets.sh 12) a user is hashed at that cost, and
`BasicAuth.check` answers, interleaved, a wrong password for that user and a password for an
unknown user, every guess new (so neither verdict cache helps). The stand-in hash is made before
timing starts, as it is once per process. Reported per cost: the fastest of each (the run least
disturbed by other jobs on a shared machine) and their ratio (unknown / known; 1.0 means the
names cannot be told apart by timing), next to the same ratio against the old fixed cost-10
stand-in (bcrypt of the unknown user's guess against a cost-10 hash, timed the same way).
Prints one JSON object. About 20 seconds at the defaults.
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import json
import time

import bcrypt

from webconfig.auth import BasicAuth, Outcome, bcrypt_matches

OLD_STAND_IN_COST = 10


def header(user: str, password: str) -> str:
    return "Basic " + base64.b64encode(f"{user}:{password}".encode()).decode()


async def timed_check(auth: BasicAuth, users: dict[str, str], user: str, password: str) -> float:
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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=15)
    parser.add_argument("--costs", default="5,12")
    args = parser.parse_args()
    costs = [int(c) for c in args.costs.split(",")]
    results = {f"cost_{c}": asyncio.run(measure(c, args.rounds)) for c in costs}
    print(json.dumps(results, indent=1))


if __name__ == "__main__":
    main()
