"""A stalled API answer (its bytes trickling in) neither holds the loop nor hides a stuck one.

A `gpu-reclaimer run` loop in its own process speaks through the real client to the fake API
server, which trickles chosen answers one byte at a time (each socket read succeeds, so the
client's per-read timeout never fires):

- the pod list stalls on every read: each cycle ends at its deadline (`--cycle-timeout`) as an
  `error` that says so, and the loop goes on; `/healthz` stays 200 because cycles do finish;
- a call of the actions in flight stalls (actions are never cut short): the loop finishes no
  cycle within `--interval + 2 x --cycle-timeout`, `/healthz` answers 503 so that the kubelet
  restarts it, and turns 200 again once the cycle ends. The stall ends at the call's own 10 s
  deadline, so a cycle is stuck past the bound for a few seconds only: every act stalls until
  the test has seen a 503 (however late a busy machine lets it look), then none does.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from controller_process import Controller, controller
from e2e_world import IDLE_JOB, cluster_objects, history, wall_now
from fakeapi import FakeCluster
from promserver import PromServer, free_port

pytestmark = [pytest.mark.prometheus, pytest.mark.slow]
# the world the conftest's fixtures build (prom: history(now); cluster: cluster_objects(now))
world_history = history
world_objects = cluster_objects

TRICKLE_S = 0.2  # between two bytes: far inside the client's 10 s socket timeout
ERRORS = 'gpu_reclaimer_cycles_total{result="error"}'


@pytest.fixture(scope="module")
def now() -> float:
    return wall_now()


def _args(prom_url: str, kubeconfig: Path, cycle_timeout: str) -> list[str]:
    return [
        "--prometheus-url",
        prom_url,
        "--kubeconfig",
        str(kubeconfig),
        "--interval",
        "1s",
        "--cycle-timeout",
        cycle_timeout,
    ]


def test_a_stalled_read_ends_the_cycle_at_its_deadline_and_the_loop_goes_on(
    kubeconfig: Path, cluster: FakeCluster, tmp_path: Path
) -> None:
    cluster.inject("GET", r"^/api/v1/pods$", None, times=1000, trickle=TRICKLE_S)
    # the cluster read stalls before Prometheus is asked: none is needed here
    args = _args(f"http://127.0.0.1:{free_port()}", kubeconfig, "2s")
    with controller(args, tmp_path / "controller.log") as c:
        c.wait_for(lambda: (c.metric(ERRORS) or 0) >= 2, "two cycles ended at their deadline")
        assert "cycle deadline: the cluster and Prometheus reads did not finish within 2s" in (
            c.log()
        )
        c.wait_for(lambda: _health(c) == 200, "/healthz: the loop is alive, its cycles finish")
        assert c.get("/readyz")[0] == 503  # but none has completed
        assert c.metric('gpu_reclaimer_cycles_total{result="success"}') == 0.0


def _health(c: Controller, seen: list[str] | None = None) -> int:
    status, body = c.get("/healthz")
    if seen is not None:
        seen.append(body)
    return status


def test_a_loop_stuck_past_its_bound_fails_healthz_until_a_cycle_finishes(
    prom: PromServer, kubeconfig: Path, cluster: FakeCluster, tmp_path: Path
) -> None:
    namespace, name = IDLE_JOB.split("/")
    # the actuator's re-read of the job it stops: every read before it answers at once
    job = rf"^/apis/batch.volcano.sh/v1alpha1/namespaces/{namespace}/jobs/{name}$"
    cluster.inject("GET", job, None, times=1000, trickle=TRICKLE_S)  # each cycle's act stalls
    # bound: 1s + 2 x 3s = 7s; a stalled call lasts until its own 10 s deadline
    with controller(_args(prom.url, kubeconfig, "3s"), tmp_path / "controller.log") as c:
        bodies: list[str] = []
        c.wait_for(lambda: _health(c, bodies) == 503, "/healthz to fail while an act is stuck")
        assert "more than the bound of 7s" in bodies[-1]
        assert "the control loop is stuck" in bodies[-1]
        assert "/healthz: no cycle finished for" in c.log()
        with cluster.lock:
            cluster.faults.clear()  # the next act answers at once
        c.wait_for(lambda: _health(c) == 200, "/healthz to recover once the cycle ends")
        c.wait_for(
            lambda: f"preempt {IDLE_JOB}: " in c.log() and "answer not complete" in c.log(),
            "the stalled action to fail with the call's deadline",
        )
