"""A stateful fake of the API server's `GET /api/v1/pods` and `GET /apis/resource.k8s.io/<v>/
resourceslices`, served over HTTP(S) on loopback.

It honours `fieldSelector=spec.nodeName=<node>`, `limit` and `continue` (the token is an
offset), records what every request carried (query, Authorization header) and can be told to
misbehave: answer a status code with a Kubernetes `Status` body, answer a raw body (bad JSON),
or stall until released (timeouts). ResourceSlices are served only in `slice_versions` (a 404
otherwise, as from a server that lacks the version), with the field labels the API server
accepts for them (`fake_slices`).
"""

from __future__ import annotations

import contextlib
import json
import ssl
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlparse

from fake_slices import SLICES_PREFIX, select_slices


def pod_json(uid: str, ns: str, name: str, node: str, container_ids: dict[str, str]) -> Any:
    return {
        "metadata": {"uid": uid, "namespace": ns, "name": name},
        "spec": {"nodeName": node, "containers": [{"name": n} for n in container_ids]},
        "status": {
            "containerStatuses": [
                {"name": n, "containerID": f"containerd://{cid}"}
                for n, cid in container_ids.items()
            ]
        },
    }


@dataclass(frozen=True)
class Seen:
    path: str
    query: dict[str, list[str]]
    authorization: str | None


@dataclass
class FakePodsApi:
    pods: list[Any] = field(default_factory=list)
    status: int = 200  # anything else: a `Status` body with this code
    raw_body: bytes | None = None  # answered verbatim with 200 (e.g. not JSON)
    redirect_to: str | None = None
    stall: bool = False  # hold every answer until `release` is set
    release: threading.Event = field(default_factory=threading.Event)
    seen: list[Seen] = field(default_factory=list)
    slices: list[Any] = field(default_factory=list)  # ResourceSlices, resource.k8s.io/v1 schema
    slice_versions: tuple[str, ...] = ("v1",)  # the resource.k8s.io versions served

    def answer(self, path: str, query: dict[str, list[str]]) -> tuple[int, bytes]:
        if self.raw_body is not None:
            return 200, self.raw_body
        if self.status == 200 and path.startswith(SLICES_PREFIX):
            code, body = select_slices(self.slices, self.slice_versions, path, query)
            return code, json.dumps(body).encode()
        if self.status != 200 or path != "/api/v1/pods":
            code = self.status if self.status != 200 else 404
            message = f"pods is forbidden ({code})" if code == 403 else f"failure {code}"
            body = {"kind": "Status", "status": "Failure", "code": code, "message": message}
            return code, json.dumps(body).encode()
        selector = query.get("fieldSelector", [""])[0]
        node = selector.removeprefix("spec.nodeName=") if selector else None
        items = [p for p in self.pods if node is None or p["spec"]["nodeName"] == node]
        start = int(query.get("continue", ["0"])[0])
        limit = int(query.get("limit", [str(len(items) or 1)])[0])
        end = start + limit
        meta = {"resourceVersion": "1", "continue": str(end) if end < len(items) else ""}
        page = {"kind": "PodList", "apiVersion": "v1", "metadata": meta, "items": items[start:end]}
        return 200, json.dumps(page).encode()

    def handler(self) -> type[BaseHTTPRequestHandler]:
        api = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                url = urlparse(self.path)
                query = parse_qs(url.query)
                api.seen.append(Seen(url.path, query, self.headers.get("Authorization")))
                if api.stall:
                    api.release.wait(30)
                if api.redirect_to is not None:
                    self.send_response(302)
                    self.send_header("Location", api.redirect_to)
                    self.send_header("Content-Length", "0")
                    self.end_headers()
                    return
                code, data = api.answer(url.path, query)
                # a client that gave up on a stalled answer has closed the connection: the
                # answer has nowhere to go, which is what that test wants, not a server error
                with contextlib.suppress(BrokenPipeError, ConnectionResetError):
                    self.send_response(code)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(data)))
                    self.end_headers()
                    self.wfile.write(data)

            def log_message(self, *_args: Any) -> None:
                pass

        return Handler


@contextmanager
def serve(api: FakePodsApi, tls: ssl.SSLContext | None = None) -> Iterator[str]:
    """Serve `api` on 127.0.0.1 (HTTPS when `tls` is given); yields the base URL."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), api.handler())
    server.daemon_threads = True
    if tls is not None:
        server.socket = tls.wrap_socket(server.socket, server_side=True)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    scheme = "https" if tls is not None else "http"
    try:
        yield f"{scheme}://127.0.0.1:{server.server_port}"
    finally:
        api.release.set()
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)
