"""Flood benchmark (not a test): how long a right password waits while wrong ones flood bcrypt.

    PYTHONPATH=. python bench/auth_flood_bench.py [--costs 10,12] [--flood 20]

Runs the scenario of tests/webconfig/test_webconfig_flood.py with its helpers, at each bcrypt
cost: a real guarded server in this process whose one user is hashed at that cost, `--flood`
connections from 127.0.0.1 sending new wrong passwords as fast as they are answered, and, once
each has been denied, one scraper with the right password (not cached yet), from the flood's
own address and then, against a fresh server, from another (127.0.0.2). Prints one JSON object:
per cost, one bcrypt check's time measured alone, and from each address the scraper's status,
its wall seconds and the wrong passwords denied while it waited (every one a bcrypt check: each
guess is new to its server). The test asserts what load cannot change (the scraper gets 200);
the wait is the wall-clock half, measured here. About a minute at the defaults.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

import bcrypt

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "tests" / "webconfig"))
sys.path.insert(0, str(HERE.parent / "tests"))
sys.path.insert(0, str(HERE.parent))

import test_webconfig_flood as flood_test  # noqa: E402
from webfixtures import running, write_atomically  # noqa: E402

from webconfig.live import LiveWebConfig  # noqa: E402

ADDRESSES = {"same_address": "127.0.0.1", "other_address": "127.0.0.2"}


async def scrape_during_flood(port: int, flood: int, scraper: str) -> dict[str, float | int]:
    seen: Counter[int] = Counter()
    stop = asyncio.Event()
    tasks = [asyncio.create_task(flood_test.flood(port, n, seen, stop)) for n in range(flood)]
    try:
        await flood_test.wait_for(lambda: seen[401] >= flood, timeout=300)
        denied_before = seen[401]
        started = time.perf_counter()
        status = await flood_test.get(port, "prometheus", flood_test.PASSWORD, scraper)
        waited = time.perf_counter() - started
        denied_meanwhile = seen[401] - denied_before
    finally:
        stop.set()
        await asyncio.gather(*tasks)
    return {"status": status, "wait_s": round(waited, 2), "denied_meanwhile": denied_meanwhile}


async def measure(cost: int, flood: int) -> dict[str, object]:
    hashed = bcrypt.hashpw(flood_test.PASSWORD.encode(), bcrypt.gensalt(cost))
    started = time.perf_counter()
    bcrypt.checkpw(b"a-wrong-password", hashed)
    one_check = time.perf_counter() - started
    result: dict[str, object] = {"one_check_s": round(one_check, 3)}
    with tempfile.TemporaryDirectory() as directory:
        path = Path(directory) / "web-config.yml"
        write_atomically(path, f"basic_auth_users:\n  prometheus: '{hashed.decode()}'\n")
        for name, address in ADDRESSES.items():
            # A fresh server each time: the flood's guesses repeat from one run to the next, and
            # a server that has denied them once answers them from its cache, without bcrypt.
            async with running(LiveWebConfig(path)) as server:
                result[name] = await scrape_during_flood(server.port, flood, address)
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--costs", default="10,12")
    parser.add_argument("--flood", type=int, default=flood_test.FLOOD)
    args = parser.parse_args()
    costs = [int(c) for c in args.costs.split(",")]
    results = {f"cost_{c}": asyncio.run(measure(c, args.flood)) for c in costs}
    print(json.dumps(results, indent=1))


if __name__ == "__main__":
    main()
