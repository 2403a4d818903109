"""Held-connection benchmark (not a test): how promptly the guard closes half-sent requests, and
how fast real scrapes are answered meanwhile.

    .venv/bin/python bench/webconfig_held_bench.py [--held 2000] [--header-timeout 3]

Runs the server of tests/webconfig/test_webconfig_held.py in its own process, opens `--held`
connections that each send half a request head, scrapes `/metrics` 20 times while they are held,
and then waits for the server to close them. Prints each close's delay past the header timeout
(from before the connection was made, so load on this process can only lengthen it) and the
scrapes' latencies. The test asserts what does not depend on the machine's load (every
connection closed, by the header timeout, never before it; memory; scrapes answered); these
numbers are the wall-clock half, measured here instead of asserted there.
"""

from __future__ import annotations

import argparse
import socket
import statistics
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "tests" / "webconfig"))
sys.path.insert(0, str(HERE.parent / "tests"))
sys.path.insert(0, str(HERE.parent))

import test_webconfig_held as held  # noqa: E402


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--held", type=int, default=held.HELD)
    p.add_argument("--header-timeout", type=float, default=held.HEADER_TIMEOUT)
    args = p.parse_args()
    held.HELD = args.held  # server_process() checks the file limit against it
    with held.server_process(args.header_timeout, args.held * 2) as (port, _):
        for _ in range(50):
            held.get(port, "/metrics")
        sockets: list[socket.socket] = []
        opened: dict[int, float] = {}
        try:
            for _ in range(args.held):
                before = time.monotonic()
                sock = socket.create_connection(("127.0.0.1", port))
                sock.sendall(held.HALF)
                sockets.append(sock)
                opened[sock.fileno()] = before
            scrapes = [held.get(port, "/metrics")[2] for _ in range(20)]
            deadline = time.monotonic() + args.header_timeout + 60
            closed = held.wait_for_closes(sockets, deadline)
        finally:
            for sock in sockets:
                sock.close()
    late = sorted(closed[fd] - opened[fd] - args.header_timeout for fd in closed)
    timeout = args.header_timeout
    print(f"{len(closed)} of {args.held} held connections closed; header timeout {timeout:g} s")
    print(
        f"close past the timeout: min {late[0]:.3f} s, median {statistics.median(late):.3f} s, "
        f"max {late[-1]:.3f} s"
    )
    print(
        f"scrapes while held: median {statistics.median(scrapes) * 1000:.0f} ms, "
        f"slowest {max(scrapes) * 1000:.0f} ms"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
