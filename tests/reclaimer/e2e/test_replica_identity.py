"""Two `run --leader-elect` processes sharing one host name against one fake API server: exactly
one leads.

Both processes run on this machine, so `socket.gethostname()` is the same for both, as for
hostNetwork pods, two processes on one VM or a template that sets `hostname:`. With the host name
as the Lease identity, each would read the other's Lease as its own and both would lead. Each
process logs its first attempt's outcome ("acquired by ID" or "held by ID; ... stands by"), so
the test waits for both outcomes instead of for a time.
"""

from __future__ import annotations

import re
import socket
from pathlib import Path

import pytest
from controller_process import Controller, controller
from fakeapi import FakeCluster
from promserver import free_port

pytestmark = pytest.mark.slow

ACQUIRED = re.compile(r"lease gpu-reclaim/gpu-reclaimer acquired by (\S+)")
STANDING_BY = re.compile(r"Lease gpu-reclaim/gpu-reclaimer is held by (\S+); (\S+) stands by")


@pytest.fixture
def cluster() -> FakeCluster:
    return FakeCluster()


def _decided(c: Controller) -> bool:
    return bool(ACQUIRED.search(c.log()) or STANDING_BY.search(c.log()))


def test_two_processes_on_one_host_name_elect_exactly_one_leader(
    kubeconfig: Path, cluster: FakeCluster, tmp_path: Path
) -> None:
    # Prometheus is not needed to lead: nothing listens there, every cycle is skipped.
    args = ["--prometheus-url", f"http://127.0.0.1:{free_port()}", "--kubeconfig", str(kubeconfig)]
    args += ["--leader-elect", "--interval", "1s"]
    with (
        controller(args, tmp_path / "a.log") as a,
        controller(args, tmp_path / "b.log") as b,
    ):
        for c in (a, b):
            c.wait_for(lambda c=c: _decided(c), "a first Lease attempt")
        leaders = [c for c in (a, b) if ACQUIRED.search(c.log())]
        assert len(leaders) == 1, a.log() + b.log()
        (leader,) = leaders
        (standby,) = [c for c in (a, b) if c is not leader]
        found = ACQUIRED.search(leader.log())
        waiting = STANDING_BY.search(standby.log())
        assert found is not None and waiting is not None
        identity = found.group(1)
        assert waiting.group(1) == identity  # the standby names the leader...
        assert waiting.group(2) != identity  # ...and is someone else
        host = socket.gethostname()
        assert identity.startswith(f"{host}_") and waiting.group(2).startswith(f"{host}_")
        with cluster.lock:  # the leader renews it meanwhile
            (lease,) = cluster.all("coordination.k8s.io", "v1", "leases")
        assert lease["spec"]["holderIdentity"] == identity
        # each says so on /metrics once a cycle has ended after its first attempt
        leader.wait_for(lambda: leader.metric("gpu_reclaimer_is_leader") == 1.0, "leader metric")
        standby.wait_for(
            lambda: (
                standby.metric('gpu_reclaimer_cycles_total{result="skipped"}') is not None
                and (standby.metric('gpu_reclaimer_cycles_total{result="skipped"}') or 0) >= 2
            ),
            "two cycles on the standby",
        )
        assert standby.metric("gpu_reclaimer_is_leader") == 0.0
