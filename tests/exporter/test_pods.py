"""The node's pods through the real `kubernetes` client against a fake API server on loopback."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlparse

import pytest
from kubernetes import client

from exporter.pods import KubernetesPods, PodsFile, parse_pod_list
from exporter.sources import PodIdentity


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


@dataclass
class FakeApi:
    """Stateful: holds pods, answers `GET /api/v1/pods` honouring fieldSelector=spec.nodeName."""

    pods: list[Any] = field(default_factory=list)
    fail: bool = False
    queries: list[dict[str, list[str]]] = field(default_factory=list)

    def handler(self) -> type[BaseHTTPRequestHandler]:
        api = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                url = urlparse(self.path)
                query = parse_qs(url.query)
                api.queries.append(query)
                if api.fail or url.path != "/api/v1/pods":
                    self._send(500, {"kind": "Status", "status": "Failure", "code": 500})
                    return
                selector = query.get("fieldSelector", [""])[0]
                node = selector.removeprefix("spec.nodeName=") if selector else None
                items = [p for p in api.pods if node is None or p["spec"]["nodeName"] == node]
                self._send(200, {"kind": "PodList", "apiVersion": "v1", "items": items})

            def _send(self, code: int, body: Any) -> None:
                data = json.dumps(body).encode()
                self.send_response(code)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *_args: Any) -> None:
                pass

        return Handler


@pytest.fixture
def api() -> Iterator[tuple[FakeApi, Any]]:
    fake = FakeApi()
    server = ThreadingHTTPServer(("127.0.0.1", 0), fake.handler())
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    configuration = client.Configuration(host=f"http://127.0.0.1:{server.server_port}")
    configuration.retries = 0
    try:
        yield fake, configuration
    finally:
        server.shutdown()
        server.server_close()


def test_lists_this_nodes_pods_with_container_names(api: tuple[FakeApi, Any]) -> None:
    fake, configuration = api
    fake.pods = [
        pod_json("u1", "team-a", "train", "node-a", {"trainer": "c" * 64}),
        pod_json("u2", "team-b", "other", "node-b", {"x": "d" * 64}),
    ]
    pods = KubernetesPods("node-a", configuration=configuration, start=False)
    try:
        pods.refresh()
        lookup = pods.lookup()
    finally:
        pods.close()
    assert lookup.ok and lookup.new_errors == 0 and lookup.index is not None
    assert dict(lookup.index.by_uid) == {"u1": PodIdentity("u1", "team-a", "train")}
    assert dict(lookup.index.container_names) == {"c" * 64: "trainer"}
    assert fake.queries[-1]["fieldSelector"] == ["spec.nodeName=node-a"]


def test_api_errors_keep_the_last_good_index_and_are_counted(api: tuple[FakeApi, Any]) -> None:
    fake, configuration = api
    fake.pods = [pod_json("u1", "team-a", "train", "node-a", {})]
    pods = KubernetesPods("node-a", configuration=configuration, start=False)
    try:
        pods.refresh()
        fake.fail = True
        pods.refresh()
        pods.refresh()
        failed = pods.lookup()
        fake.fail = False
        pods.refresh()
        recovered = pods.lookup()
    finally:
        pods.close()
    assert not failed.ok and failed.new_errors == 2
    assert failed.index is not None and "u1" in failed.index.by_uid
    assert recovered.ok and recovered.new_errors == 0


def test_an_unreachable_api_degrades_without_raising() -> None:
    configuration = client.Configuration(host="http://127.0.0.1:1")
    configuration.retries = 0
    pods = KubernetesPods("node-a", configuration=configuration, start=False, request_timeout=2)
    try:
        pods.refresh()
        lookup = pods.lookup()
    finally:
        pods.close()
    assert lookup.index is None and not lookup.ok and lookup.new_errors == 1


def test_the_background_thread_refreshes_when_an_unknown_uid_shows_up(
    api: tuple[FakeApi, Any],
) -> None:
    fake, configuration = api
    fake.pods = [pod_json("u1", "a", "one", "n", {})]
    pods = KubernetesPods("n", configuration=configuration, refresh_seconds=3600, min_gap_seconds=0)
    try:
        for _ in range(1000):  # the first list runs as the thread starts
            if pods.lookup().index is not None:
                break
            threading.Event().wait(0.01)
        fake.pods.append(pod_json("u2", "a", "two", "n", {}))
        pods.want(["u2"])
        for _ in range(500):
            index = pods.lookup().index
            if index is not None and "u2" in index.by_uid:
                break
            threading.Event().wait(0.01)
    finally:
        pods.close()
    assert index is not None and index.by_uid["u2"].name == "two"


def test_parse_pod_list_skips_pods_without_uid_and_containers_without_ids() -> None:
    data = {
        "items": [
            {"metadata": {"name": "no-uid"}},
            {
                "metadata": {"uid": "u", "namespace": "n", "name": "p"},
                "status": {
                    "containerStatuses": [{"name": "waiting"}],
                    "initContainerStatuses": [{"name": "init", "containerID": "cri-o://abc"}],
                },
            },
        ]
    }
    index = parse_pod_list(data)
    assert dict(index.by_uid) == {"u": PodIdentity("u", "n", "p")}
    assert dict(index.container_names) == {"abc": "init"}


def test_pods_file_fixture(tmp_path: Path) -> None:
    path = tmp_path / "pods.json"
    path.write_text(json.dumps([{"uid": "u", "namespace": "n", "name": "p"}]))
    source = PodsFile(path)
    first = source.lookup()
    path.write_text("not json")
    broken = source.lookup()
    assert first.ok and first.index is not None and first.index.by_uid["u"].name == "p"
    assert not broken.ok and broken.new_errors == 1 and broken.index == first.index
