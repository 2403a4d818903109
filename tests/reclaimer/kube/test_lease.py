"""Leader election over the fake API server, with injected clocks."""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass

import pytest
from fakeapi import FakeCluster

from reclaimer.decisions import Action, ActionKind, Evidence, Outcome, Reason
from reclaimer.kube.lease import LeaderElector, LeaseConfig, may_take
from reclaimer.kube.read import read_cluster_sync
from reclaimer.runtime.actuator import Actuator

LEASE = ("coordination.k8s.io", "v1", "leases")
GIVE_UP_S = 60.0  # only a hung elector takes this long, even on a busy machine
WALL0 = 1_796_000_000.0


@dataclass
class Clock:
    t: float = 0.0

    def __call__(self) -> float:
        return self.t


def elector(api, identity: str, mono: Clock) -> LeaderElector:
    cfg = LeaseConfig(identity=identity, lease_duration_s=15, renew_deadline_s=10, retry_period_s=2)
    return LeaderElector(api, cfg, wall=lambda: WALL0 + mono.t, monotonic=mono)


def holder(cluster: FakeCluster) -> str | None:
    lease = cluster.get(*LEASE, "gpu-reclaimer", "gpu-reclaim")
    return None if lease is None else lease["spec"].get("holderIdentity")


@pytest.mark.parametrize(
    ("holder_id", "observed_at", "now", "expected"),
    [("", 0, 0, True), ("me", 0, 0, True), ("other", 0, 14.9, False), ("other", 0, 15, True)],
    ids=["free", "ours", "fresh-other", "expired-other"],
)
def test_may_take(holder_id: str, observed_at: float, now: float, expected: bool) -> None:
    assert may_take(holder_id, "me", observed_at, now, 15) is expected


def test_config_rejects_unsafe_timings() -> None:
    with pytest.raises(ValueError):
        LeaseConfig(identity="a", lease_duration_s=10, renew_deadline_s=10)


def test_acquire_renew_and_stand_by(api, cluster: FakeCluster) -> None:
    ca, cb = Clock(), Clock()
    a, b = elector(api, "a", ca), elector(api, "b", cb)
    assert a.try_acquire_or_renew() and a.is_leader()
    assert holder(cluster) == "a"
    created = cluster.get(*LEASE, "gpu-reclaimer", "gpu-reclaim")["spec"]
    assert created["leaseDurationSeconds"] == 15 and created["renewTime"].endswith("Z")
    assert not b.try_acquire_or_renew()
    for _ in range(10):  # a renews every 2 s; b never sees the record stand still for 15 s
        ca.t += 2
        cb.t += 2
        assert a.try_acquire_or_renew()
        assert not b.try_acquire_or_renew() and not b.is_leader()
    assert cluster.get(*LEASE, "gpu-reclaimer", "gpu-reclaim")["spec"]["leaseTransitions"] == 0


def test_failing_renews_keep_the_lead_only_until_the_deadline(api, cluster: FakeCluster) -> None:
    ca = Clock()
    a = elector(api, "a", ca)
    assert a.try_acquire_or_renew()
    cluster.inject("PUT", "/leases/gpu-reclaimer$", 500, times=100)
    ca.t = 9.9
    assert a.try_acquire_or_renew() and a.is_leader()  # failed renew, deadline not reached
    ca.t = 10.0
    assert not a.try_acquire_or_renew() and not a.is_leader()


def test_stalled_leader_stops_before_anyone_can_take_over(api, cluster: FakeCluster) -> None:
    ca, cb = Clock(), Clock()
    a, b = elector(api, "a", ca), elector(api, "b", cb)
    assert a.try_acquire_or_renew()
    assert not b.try_acquire_or_renew()  # b observes a's record at its time 0
    lost_at = taken_at = None
    for step in range(1, 20):  # a stops renewing (stalled, partitioned); b keeps trying
        ca.t = cb.t = float(step)
        if lost_at is None and not a.is_leader():
            lost_at = step
        if b.try_acquire_or_renew():
            taken_at = step
            break
    assert (lost_at, taken_at) == (10, 15)  # renew deadline 10 s < lease duration 15 s
    assert holder(cluster) == "b"
    assert cluster.get(*LEASE, "gpu-reclaimer", "gpu-reclaim")["spec"]["leaseTransitions"] == 1
    assert not a.try_acquire_or_renew()  # a comes back: the lease is b's now


def test_conflict_means_not_leader(api, cluster: FakeCluster) -> None:
    a = elector(api, "a", Clock())
    assert a.try_acquire_or_renew()
    cluster.inject("PUT", "/leases/gpu-reclaimer$", 409)
    assert not a.try_acquire_or_renew() and not a.is_leader()


def test_release_hands_over_at_once(api, cluster: FakeCluster) -> None:
    a, b = elector(api, "a", Clock()), elector(api, "b", Clock())
    assert a.try_acquire_or_renew()
    assert not b.try_acquire_or_renew()
    a.release()
    assert not a.is_leader() and holder(cluster) is None
    assert b.try_acquire_or_renew() and holder(cluster) == "b"
    a.release()  # not holding: writes nothing
    assert holder(cluster) == "b"


async def test_run_loop_releases_on_stop(api, cluster: FakeCluster) -> None:
    a = elector(api, "a", Clock())
    stop = asyncio.Event()
    task = asyncio.create_task(a.run(stop))
    give_up = time.monotonic() + GIVE_UP_S
    while not a.is_leader():  # its first attempt runs in a thread, at the machine's pace
        assert time.monotonic() < give_up, "no first Lease attempt"
        await asyncio.sleep(0.01)
    stop.set()
    await asyncio.wait_for(task, GIVE_UP_S)
    assert holder(cluster) is None and not a.is_leader()


def test_actuator_consults_the_lease_before_writing(api, cluster: FakeCluster) -> None:
    mono = Clock()
    a = elector(api, "a", mono)
    assert a.try_acquire_or_renew()
    view = read_cluster_sync(api, now=WALL0)
    act = Actuator(api, clock=lambda: WALL0, dry_run=False, may_write=a.is_leader)
    action = Action(
        ActionKind.PREEMPT, "research/bert-train", Reason.IDLE_FOR_STARVED_QUEUE, Evidence()
    )
    mono.t = 10.0  # renew deadline passed without a renew
    [res] = act.apply([action], view)
    assert res.outcome is Outcome.SKIPPED and "leader" in res.detail
    assert not [q for q in cluster.writes() if "/leases" not in q.path]
    mono.t = 11.0
    assert a.try_acquire_or_renew()
    [res] = act.apply([action], view)
    assert res.outcome is Outcome.APPLIED
