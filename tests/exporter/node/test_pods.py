"""The node's pods from a fake API server on loopback, through the exporter's stdlib reader."""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from fake_pods_api import FakePodsApi, pod_json, serve

from exporter.node.apiserver import ApiEndpoint
from exporter.node.pods import KubernetesPods, PodsFile, parse_pod_pages
from exporter.sources import PodIdentity

GIVE_UP_S = 60.0  # only a hung fake API or thread takes this long, even on a busy machine


@pytest.fixture
def api() -> Iterator[tuple[FakePodsApi, ApiEndpoint]]:
    fake = FakePodsApi()
    with serve(fake) as url:
        yield fake, ApiEndpoint(url)


def test_lists_this_nodes_pods_with_container_names(
    api: tuple[FakePodsApi, ApiEndpoint],
) -> None:
    fake, endpoint = api
    fake.pods = [
        pod_json("u1", "team-a", "train", "node-a", {"trainer": "c" * 64}),
        pod_json("u2", "team-b", "other", "node-b", {"x": "d" * 64}),
    ]
    pods = KubernetesPods("node-a", endpoint, start=False)
    pods.refresh()
    lookup = pods.lookup()
    pods.close()
    assert lookup.ok and lookup.new_errors == 0 and lookup.index is not None
    assert dict(lookup.index.by_uid) == {"u1": PodIdentity("u1", "team-a", "train")}
    assert dict(lookup.index.container_names) == {"c" * 64: "trainer"}
    assert fake.seen[-1].query["fieldSelector"] == ["spec.nodeName=node-a"]
    assert fake.seen[-1].authorization is None  # no token file: no header


@pytest.mark.parametrize("page_limit", [1, 3, 7, 500], ids=lambda n: f"limit-{n}")
def test_pages_are_followed_to_the_last_continue_token(
    api: tuple[FakePodsApi, ApiEndpoint], page_limit: int
) -> None:
    fake, endpoint = api
    mine = [pod_json(f"u{i}", "ns", f"p{i}", "node-a", {f"c{i}": f"{i:064x}"}) for i in range(7)]
    fake.pods = [*mine[:4], pod_json("x", "ns", "elsewhere", "node-b", {}), *mine[4:]]
    pods = KubernetesPods("node-a", endpoint, start=False, page_limit=page_limit)
    pods.refresh()
    index = pods.lookup().index
    pods.close()
    assert index is not None
    assert sorted(index.by_uid) == sorted(p["metadata"]["uid"] for p in mine)
    assert len(index.container_names) == len(mine)
    pages = -(-len(mine) // page_limit)
    assert len(fake.seen) == pages
    assert [q.query.get("continue") for q in fake.seen] == [
        None,
        *[[str(page_limit * k)] for k in range(1, pages)],
    ]
    assert {q.query["limit"][0] for q in fake.seen} == {str(page_limit)}


def _break(fake: FakePodsApi, how: str) -> None:
    if how == "bad-json":
        fake.raw_body = b'{"kind": "PodList", "items": [tru'
    elif how == "json-array":
        fake.raw_body = b"[]"
    elif how == "not-a-pod-list":
        fake.raw_body = b'{"items": {"uid": "u1"}}'
    elif how == "timeout":
        fake.stall = True
    else:
        fake.status = int(how.split("-", maxsplit=1)[0])


def _mend(fake: FakePodsApi) -> None:
    fake.status, fake.raw_body, fake.stall = 200, None, False
    fake.release.set()


FAILURES = ["401-unauthorized", "403-forbidden", "500-server-error", "503-unavailable"]
FAILURES += ["bad-json", "json-array", "not-a-pod-list", "timeout"]


@pytest.mark.parametrize("how", FAILURES)
def test_failures_keep_the_last_good_index_are_counted_and_warned_once(
    api: tuple[FakePodsApi, ApiEndpoint], how: str, caplog: pytest.LogCaptureFixture
) -> None:
    fake, endpoint = api
    fake.pods = [pod_json("u1", "team-a", "train", "node-a", {})]
    # A stalled answer ends at the request timeout; every other answer comes at once, so the
    # timeout only needs to be long for them (a busy machine) when nothing stalls.
    timeout = 5.0 if how == "timeout" else GIVE_UP_S
    pods = KubernetesPods("node-a", endpoint, start=False, request_timeout=timeout)
    pods.refresh()
    _break(fake, how)
    with caplog.at_level(logging.DEBUG, logger="exporter.node.pods"):
        pods.refresh()
        pods.refresh()
    failed = pods.lookup()
    _mend(fake)
    pods.refresh()
    recovered = pods.lookup()
    pods.close()
    assert not failed.ok and failed.new_errors == 2
    assert failed.index is not None and "u1" in failed.index.by_uid
    assert recovered.ok and recovered.new_errors == 0
    warnings = [r for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warnings) == 1 and "node-a" in warnings[0].getMessage()


def test_the_token_is_re_read_for_every_request(
    api: tuple[FakePodsApi, ApiEndpoint], tmp_path: Path
) -> None:
    fake, endpoint = api
    fake.pods = [pod_json(f"u{i}", "ns", f"p{i}", "n", {}) for i in range(2)]
    token = tmp_path / "token"
    token.write_text("first\n")
    pods = KubernetesPods("n", ApiEndpoint(endpoint.base_url, token), start=False, page_limit=1)
    pods.refresh()
    token.write_text("second")  # the kubelet rotated the projected token
    pods.refresh()
    token.unlink()
    pods.refresh()
    lookup = pods.lookup()
    pods.close()
    assert [s.authorization for s in fake.seen] == ["Bearer first"] * 2 + ["Bearer second"] * 2
    assert not lookup.ok and lookup.new_errors == 1  # no token: the list fails, nothing is sent


@pytest.mark.parametrize(
    "endpoint",
    [ApiEndpoint("http://127.0.0.1:1"), None],
    ids=["connection-refused", "no-api-server-known"],
)
def test_an_unavailable_api_degrades_without_raising(endpoint: ApiEndpoint | None) -> None:
    pods = KubernetesPods("node-a", endpoint, start=False, request_timeout=2)
    pods.refresh()
    lookup = pods.lookup()
    pods.close()
    assert lookup.index is None and not lookup.ok and lookup.new_errors == 1


def test_the_background_thread_refreshes_when_an_unknown_uid_shows_up(
    api: tuple[FakePodsApi, ApiEndpoint],
) -> None:
    fake, endpoint = api
    fake.pods = [pod_json("u1", "a", "one", "n", {})]
    pods = KubernetesPods("n", endpoint, refresh_seconds=3600, min_gap_seconds=0)
    try:
        until(lambda: pods.lookup().index is not None)  # the first list runs as it starts
        fake.pods.append(pod_json("u2", "a", "two", "n", {}))
        pods.want(["u2"])
        until(lambda: "u2" in getattr(pods.lookup().index, "by_uid", {}))
        index = pods.lookup().index
    finally:
        pods.close()
    assert index is not None and index.by_uid["u2"].name == "two"


def until(check: Callable[[], bool]) -> None:
    """Until `check()` holds; the deadline only gives up on a thread that never refreshes."""
    deadline = time.monotonic() + GIVE_UP_S
    while not check():
        assert time.monotonic() < deadline, "the background thread never refreshed"
        time.sleep(0.01)


def test_parse_pod_pages_skips_pods_without_uid_and_containers_without_ids() -> None:
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
    index = parse_pod_pages((data,))
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


def test_parse_pod_pages_rejects_what_is_not_a_pod_list() -> None:
    with pytest.raises(ValueError, match="not a PodList"):
        parse_pod_pages(({"items": [["u", "n", "p"]]},))
