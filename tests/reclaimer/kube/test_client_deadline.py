"""One API call has an overall deadline, not only a per-read socket timeout.

The fake API server trickles the answer's body (one byte every 0.1 s, well inside the client's
socket timeout, so no single read ever times out). Without a deadline of its own `call()` waits
for the whole trickle and returns it as a success; with one it gives up after `timeout`, says
so, and the client's next call works on a fresh connection.
"""

from __future__ import annotations

import pytest
from fakeapi import FakeApiServer, FakeCluster
from kubernetes import client as k8s

from reclaimer.kube.client import KubeError, api_from_configuration, call

TRICKLE_S = 0.1  # between two bytes of the answer; the empty pod list takes about 8 s in all
TIMEOUT_S = 1.0


def test_a_trickled_answer_ends_at_the_call_deadline(server: FakeApiServer) -> None:
    cluster: FakeCluster = server.cluster
    api = api_from_configuration(k8s.Configuration(host=server.url), timeout=TIMEOUT_S)
    try:
        cluster.inject("GET", r"^/api/v1/namespaces/empty/pods$", None, trickle=TRICKLE_S)
        with pytest.raises(KubeError) as raised:
            call(api, api.core.list_namespaced_pod, "empty")
        assert (raised.value.status, raised.value.reason) == (0, "Timeout")
        assert "not complete within 1s" in str(raised.value)
        # the next call answers at once, on a connection of its own
        assert call(api, api.core.list_namespaced_pod, "empty")["items"] == []
    finally:
        api.close()
    assert [r.path for r in cluster.requests] == ["/api/v1/namespaces/empty/pods"] * 2
