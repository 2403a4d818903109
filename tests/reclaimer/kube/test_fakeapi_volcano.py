"""The fake's Volcano job controller takes an AbortJob Command up in Volcano's own order.

The order and the states are written here from volcano-sh/volcano pkg/controllers/job
(`processNextCommand`, `killPods`, state/running.go and state/aborting.go), as `fakeapi.volcano`
cites them: the Command is deleted first, each live pod is marked out of sync and deleted (and
stays Terminating for its grace period), a finished pod is kept, the Job goes Aborting with the
terminating pods counted, its PodGroup is deleted; Aborted only once no pod is left.
"""

from __future__ import annotations

import copy
import threading
from types import TracebackType
from typing import Any

import e2e_world as vc
import pytest
from fakeapi import FakeApiServer, FakeCluster
from fakeapi import volcano as volcano_controller

NOW = 1_760_000_000.0
NS = "research"
VCJ = ("batch.volcano.sh", "v1alpha1", "jobs")
CMD = ("bus.volcano.sh", "v1alpha1", "commands")
PODS = ("", "v1", "pods")
PODGROUPS = ("scheduling.volcano.sh", "v1beta1", "podgroups")
OUT_OF_SYNC = "volcano.sh/controller-out-of-sync"


def command(cluster: FakeCluster, action: str = "AbortJob") -> dict[str, Any]:
    job = cluster.get(*VCJ, "sim-sweep", NS)
    assert job is not None
    target = {
        "apiVersion": "batch.volcano.sh/v1alpha1",
        "kind": "Job",
        "name": "sim-sweep",
        "uid": job["metadata"]["uid"],
        "controller": True,
    }
    return {
        "apiVersion": "bus.volcano.sh/v1alpha1",
        "kind": "Command",
        "metadata": {"name": f"sim-sweep-{action.lower()}", "namespace": NS},
        "action": action,
        "target": target,
    }


@pytest.fixture
def cluster() -> FakeCluster:
    c = FakeCluster()
    c.add(*vc.cluster_objects(NOW))
    done = copy.deepcopy(c.get(*PODS, "sim-sweep-w-0", NS))
    assert done is not None
    done["metadata"].update(name="sim-sweep-w-old", uid="done-0")
    done["status"]["phase"] = "Succeeded"  # PodRetainPhaseSoft keeps it
    c.add(done)
    c.add(command(c))
    return c


def test_an_abort_in_volcanos_order(cluster: FakeCluster) -> None:
    uid = cluster.get(*VCJ, "sim-sweep", NS)["metadata"]["uid"]  # type: ignore[index]
    steps = volcano_controller.reconcile(cluster)
    assert steps == [
        "Command sim-sweep-abortjob deleted",
        "CommandIssued Event",
        "Pod sim-sweep-w-0 out of sync",
        "Pod sim-sweep-w-0 Terminating 30s",
        "Pod sim-sweep-w-1 out of sync",
        "Pod sim-sweep-w-1 Terminating 30s",
        "Job sim-sweep Aborting",
        f"PodGroup sim-sweep-{uid} deleted",
    ]
    assert cluster.all(*CMD) == []
    job = cluster.get(*VCJ, "sim-sweep", NS)
    assert job is not None
    assert job["status"]["state"]["phase"] == "Aborting"
    assert (job["status"]["terminating"], job["status"]["running"]) == (2, 0)
    for name in ("sim-sweep-w-0", "sim-sweep-w-1"):
        pod = cluster.get(*PODS, name, NS)
        assert pod is not None and pod["metadata"]["deletionTimestamp"]
        assert pod["metadata"]["deletionGracePeriodSeconds"] == 30
        assert pod["metadata"]["annotations"][OUT_OF_SYNC] == "true"
    kept = cluster.get(*PODS, "sim-sweep-w-old", NS)
    assert kept is not None and not kept["metadata"].get("deletionTimestamp")
    assert cluster.get(*PODGROUPS, f"sim-sweep-{uid}", NS) is None
    train = cluster.get(*VCJ, "train", NS)
    assert train is not None and train["status"]["state"]["phase"] == "Running"
    (event,) = [e for e in cluster.all("", "v1", "events") if e["reason"] == "CommandIssued"]
    assert event["involvedObject"]["name"] == "sim-sweep"


def test_aborted_only_once_no_pod_is_left(cluster: FakeCluster) -> None:
    volcano_controller.reconcile(cluster)
    assert volcano_controller.reconcile(cluster) == []  # the pods still terminate
    assert cluster.get(*VCJ, "sim-sweep", NS)["status"]["state"]["phase"] == "Aborting"  # type: ignore[index]
    assert cluster.finish_termination(NS, "sim-sweep-w-0") == 1
    assert volcano_controller.reconcile(cluster) == []
    assert cluster.finish_termination(NS) == 1
    assert volcano_controller.reconcile(cluster) == ["Job sim-sweep Aborted"]
    job = cluster.get(*VCJ, "sim-sweep", NS)
    assert job is not None and job["status"]["terminating"] == 0


def test_what_is_not_modelled_raises_and_changes_nothing(cluster: FakeCluster) -> None:
    cluster.objects[CMD] = {}
    cluster.add(command(cluster, "ResumeJob"))
    before = copy.deepcopy(cluster.objects)
    with pytest.raises(NotImplementedError, match="ResumeJob on Running"):
        volcano_controller.reconcile(cluster)
    assert cluster.objects == before


class Watched:
    """A lock that notes the Command and the Job's phase as it is taken and let go."""

    def __init__(self, cluster: FakeCluster) -> None:
        self.cluster = cluster
        self.inner = threading.RLock()
        self.seen: list[tuple[int, str]] = []

    def _note(self) -> None:
        job = self.cluster.get(*VCJ, "sim-sweep", NS)
        assert job is not None
        self.seen.append((len(self.cluster.all(*CMD)), job["status"]["state"]["phase"]))

    def __enter__(self) -> None:
        self.inner.acquire()
        self._note()

    def __exit__(self, *exc: type[BaseException] | BaseException | TracebackType | None) -> None:
        self._note()
        self.inner.release()


def test_the_whole_abort_happens_under_the_lock_the_server_holds(cluster: FakeCluster) -> None:
    """Taken, the lock finds the Command and a Running Job; let go, no Command and Aborting:
    no request the server answers meanwhile sees a half-made abort."""
    server = FakeApiServer(cluster).start()
    try:
        assert server.lock is cluster.lock
    finally:
        server.stop()
    watched = Watched(cluster)
    cluster.lock = watched  # type: ignore[assignment]
    volcano_controller.reconcile(cluster)
    assert watched.seen == [(1, "Running"), (0, "Aborting")]
