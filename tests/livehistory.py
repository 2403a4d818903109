"""A backfilled history that goes on live: the last value of each series, served for scraping.

A test Prometheus holds a world's history backfilled up to the moment the world was built. A
module that shares that Prometheus across its tests would see the data age as they run, and once
the newest sample is older than Prometheus' 5-minute lookback (or the reclaimer's maxDataAge) its
later tests would find no data, on a machine slow enough. `last_values` turns the history into
the exposition a live exporter would serve for that world now (each series that reaches the
history's newest step, at its last value; a series that stops earlier, a gap a test made on
purpose, stays stopped), and `serving` serves it on loopback for Prometheus to scrape
(`promserver.start_prometheus(carry_on=True)`, which drops the `job` and `instance` labels the
scrape adds, so that the scraped samples continue the backfilled series). Scraped samples are
dated when they are scraped, never ahead of the clock, as from a real exporter.
"""

from __future__ import annotations

import http.server
import threading
from collections.abc import Iterator
from contextlib import contextmanager


def last_values(history: str) -> str:
    """Prometheus text exposition of `history`'s (OpenMetrics, `promserver.openmetrics`) series
    that reach its newest step, each at its last value."""
    last: dict[str, tuple[float, float, str]] = {}  # series -> (time, step, value)
    for line in history.splitlines():
        if line.startswith("#") or not line.strip():
            continue
        key, value, stamp = line.rsplit(" ", 2)
        at = float(stamp)
        step = at - last[key][0] if key in last else 0.0
        last[key] = (at, step, value)
    if not last:
        return ""
    newest = max(at for at, _, _ in last.values())
    return "".join(
        f"{key} {value}\n" for key, (at, step, value) in last.items() if at + step > newest
    )


@contextmanager
def serving(text: str) -> Iterator[str]:
    """`text` at http://HOST:PORT/metrics until the block ends; yields HOST:PORT."""
    body = text.encode()

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            self.send_response(200)
            self.send_header("Content-Type", "text/plain; version=0.0.4")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *_: object) -> None:  # a scrape a second: no log
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()
        thread.join()
