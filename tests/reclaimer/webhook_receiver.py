"""A webhook receiver on loopback for the warnings' notifications: it answers every POST with a
status the test picks, or hangs (answers nothing until the test is done), and keeps the JSON
bodies it was sent, in order."""

from __future__ import annotations

import http.server
import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

HANG = 0  # the status that means: never answer


@dataclass
class Receiver:
    url: str
    bodies: list[dict[str, Any]] = field(default_factory=list)


@contextmanager
def receiver(status: int) -> Iterator[Receiver]:
    """Serve at http://127.0.0.1:PORT/hook until the block ends; `HANG` never answers."""
    released = threading.Event()
    got: list[dict[str, Any]] = []

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            size = int(self.headers.get("Content-Length", "0"))
            got.append(json.loads(self.rfile.read(size)))
            if status == HANG:
                released.wait()
                return
            self.send_response(status)
            self.send_header("Content-Length", "0")
            self.end_headers()

        def log_message(self, *_: object) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield Receiver(f"http://127.0.0.1:{server.server_address[1]}/hook", got)
    finally:
        released.set()
        server.shutdown()
        server.server_close()
