"""The window while an evicted pod terminates, end to end: each cycle its own `run --once`
process, the real client against the fake API server, a real Prometheus holding the history.

An evicted pod is not gone: the API server marks it (`deletionTimestamp`) and the kubelet takes
up to its grace period to stop it, and all that while it holds its GPUs. The safety world with
the idle job as a bare pod: cycle 1 evicts it for the waiting job; while it terminates, cycle 2
must count its GPUs as room in flight, neither free nor a second victim's worth (the busy job is
fair game by then), and must not evict it again; once the kubelet is done, the room is free.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from fakeapi import FakeCluster
from promserver import PromServer
from safety_world import BUSY, PENDING, POLICY, cluster_objects, history

from e2e.test_safety import cycle, preempted, skips

pytestmark = [pytest.mark.prometheus, pytest.mark.slow]
# the world the conftest's fixtures build (prom: history(now); cluster: cluster_objects(now))
world_history = history
BARE = "research/notebook-master-0"
PYT = ("kubeflow.org", "v1", "pytorchjobs")


def _bare(objs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The idle job's pod on its own: no PyTorchJob, no PodGroup of the job."""
    kept = [o for o in objs if o["metadata"]["name"] != "notebook"]
    for o in kept:
        if o["kind"] == "Pod" and o["metadata"]["name"] == "notebook-master-0":
            meta = o["metadata"]
            del meta["ownerReferences"], meta["annotations"]
            meta["labels"]["volcano.sh/queue-name"] = "research"
    return kept


@pytest.fixture
def cluster(now: float) -> FakeCluster:
    c = FakeCluster()
    c.add(*_bare(cluster_objects(now)))
    return c


def test_a_terminating_pod_is_room_in_flight_until_the_kubelet_is_done(
    prom: PromServer, kubeconfig: Path, cluster: FakeCluster, tmp_path: Path
) -> None:
    policy = tmp_path / "policy.yaml"
    policy.write_text(POLICY)
    args = ("--apply", "--policy-file", str(policy))
    code, first, err = cycle(prom.url, kubeconfig, *args)
    assert code == 0, err
    assert preempted(first) == [BARE]
    (pod,) = cluster.terminating()  # still bound, still holding its 2 GPUs
    assert pod["metadata"]["name"] == "notebook-master-0"

    seen = len(cluster.requests)
    code, second, err = cycle(prom.url, kubeconfig, *args)
    assert code == 0, err
    assert preempted(second) == []
    assert skips(second)[PENDING] == "RoomInFlight"
    assert skips(second)[BUSY] == "NotForecastIdle"
    evictions = [q for q in cluster.requests[seen:] if q.path.endswith("/eviction")]
    assert evictions == []  # not freed twice
    assert "suspend" not in cluster.get(*PYT, "train", "research")["spec"].get("runPolicy", {})

    assert cluster.finish_termination("research", "notebook-master-0") == 1
    code, third, err = cycle(prom.url, kubeconfig, *args)
    assert code == 0, err
    assert preempted(third) == []
    assert skips(third)[PENDING] == "FitsInFreeCapacity"  # the GPUs are free now
