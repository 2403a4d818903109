"""Sources that answer badly, end to end: each cycle is its own `gpu-reclaimer run --once`
process speaking through the real `kubernetes` client to the stateful fake API server, with a
real Prometheus holding the history (the world of `safety_world`: an idle job, a busy one, a
guaranteed job waiting for room).

- Clock skew: Prometheus' clock runs 10 minutes ahead of the controller's, and the idle job has
  been busy in those 10 minutes. Read up to the controller's `now`, the history misses them and
  the freshness check (newest sample before `now`) passes: the job would be stopped. Samples
  dated after the controller's clock gate the cycle (`ClockSkew`), say why, and write nothing.
- Too many samples: a Prometheus started with a low `--query.max-samples` refuses the history
  read (422); the read is split until it fits, the cycle plans (the idle job is stopped), and
  the log says so. Before, every cycle was skipped.
- Throttled: the API server answers the node list 429 with `Retry-After` every time; the cycle
  fails in one log line, no traceback, and writes nothing.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fakeapi import FakeCluster
from promserver import PromServer, start_prometheus
from runonce import once_in_process
from safety_world import IDLE, POLICY, cluster_objects, history

pytestmark = [pytest.mark.prometheus, pytest.mark.slow]
# the world the conftest's fixtures build (prom: history(now); cluster: cluster_objects(now))
world_objects = cluster_objects


def cycle(prom_url: str, kubeconfig: Path, tmp_path: Path) -> tuple[int, dict[str, Any], str]:
    """One `run --once --apply --json` in a process of its own: (exit code, report, stderr)."""
    policy = tmp_path / "policy.yaml"
    policy.write_text(POLICY)
    return once_in_process(prom_url, kubeconfig, "--apply", "--policy-file", str(policy))


@pytest.fixture(scope="module")
def skewed_prom(tmp_path_factory: pytest.TempPathFactory, now: float) -> Iterator[PromServer]:
    text = history(now, clock_ahead=600.0)
    with start_prometheus(tmp_path_factory.mktemp("prom-skewed"), history=text) as server:
        yield server


def test_samples_dated_after_the_controllers_clock_gate_the_cycle(
    skewed_prom: PromServer, kubeconfig: Path, cluster: FakeCluster, tmp_path: Path
) -> None:
    code, report, err = cycle(skewed_prom.url, kubeconfig, tmp_path)
    assert code == 1, err  # skipped: no plan on data that cannot be trusted
    assert report["plan"]["actions"] == []
    gate = {s["target"]: s for s in report["plan"]["skipped"]}["*"]
    assert gate["reason"] == "ClockSkew"
    assert "after this controller's clock" in gate["detail"]
    assert "ClockSkew" in err or "after this controller's clock" in err  # said in the log
    assert [w for w in cluster.writes() if "/leases" not in w.path] == []


@pytest.fixture(scope="module")
def limited_prom(tmp_path_factory: pytest.TempPathFactory, now: float) -> Iterator[PromServer]:
    """Too few samples a query for one request of the 2 pods x 1441 steps of a day's read."""
    work = tmp_path_factory.mktemp("prom-limited")
    flags = ["--query.max-samples=5000"]
    with start_prometheus(work, history=history(now), flags=flags) as server:
        yield server


def test_a_read_refused_as_too_many_samples_is_split_and_the_cycle_plans(
    limited_prom: PromServer, kubeconfig: Path, cluster: FakeCluster, tmp_path: Path
) -> None:
    code, report, err = cycle(limited_prom.url, kubeconfig, tmp_path)
    assert code == 0, err
    assert [a["target"] for a in report["plan"]["actions"]] == [IDLE]
    assert "as too many samples (its --query.max-samples)" in err


def test_a_list_the_api_server_keeps_throttling_fails_the_cycle_in_one_line(
    skewed_prom: PromServer, kubeconfig: Path, cluster: FakeCluster, tmp_path: Path
) -> None:
    cluster.inject("GET", "^/api/v1/nodes$", 429, times=100, retry_after="1")
    code, report, err = cycle(skewed_prom.url, kubeconfig, tmp_path)
    assert code == 1 and report["plan"] is None, err
    assert "Traceback" not in err
    (line,) = [x for x in err.splitlines() if "cycle failed" in x and "gpu_reclaimer" in x]
    assert "cluster unreadable: listing nodes: 429 Too Many Requests" in line
    assert err.count("listing nodes: throttled by the API server (429, Retry-After 1s)") == 3
    assert cluster.writes() == []
