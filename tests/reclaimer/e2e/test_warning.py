"""Warnings before a stop, end to end: each cycle a `gpu-reclaimer run --once --apply` process of
its own (a restart, every time) with its clock standing at a time the test picks
(`frozen_once`), against the fake API server and a real Prometheus.

An idle Notebook (`team/lab`, 2 GPUs) holds the one GPU node of a reclaimable queue while
`prod/llm` waits for 2 GPUs. The policy warns Notebooks 2 minutes ahead. A second notebook
(namespace `busy`) is idle for a day in the first Prometheus; a second Prometheus, read by the
cycle after its warning, has it busy for the last 20 minutes.

Every cycle's clock is set from the module's `now`, the time the histories end: the histories are
backfilled once and not scraped on (no `carry_on`), so what each cycle reads is the same however
long the machine takes, and the latest cycle (3 minutes on) still finds its data fresh.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from fakeapi import FakeCluster, served_kubeconfig
from frozen_once import applied_at
from kube.workload_objects import world
from promserver import PromServer, openmetrics, start_prometheus
from webhook_receiver import HANG, receiver

import gpu_contract as gc
from e2e.starved_world import starved_world

pytestmark = [pytest.mark.prometheus, pytest.mark.slow]
HISTORY_S = 24 * 3600
PERIOD_S = 120.0
TURNED_BUSY_S = 1200.0  # the `busy` notebook's last 20 minutes
NOTEBOOKS = ("kubeflow.org", "v1", "notebooks")
EVENTS = ("", "v1", "events")
STOPPED = "kubeflow-resource-stopped"


def _series(ns: str, now: float, since: float = math.inf) -> list[Any]:
    """A day of the notebook's two GPUs, idle, busy from `since` on."""
    times = np.arange(now - HISTORY_S, now - 15.0, 60.0)
    out = []
    for g in range(2):
        lab = {"namespace": ns, "pod": "lab-0", "container": "main", "gpu": str(g)}
        lab |= {"Hostname": "gpu-node-1", "UUID": f"GPU-{ns}-{g}"}
        out.append(
            (gc.POD_UTILIZATION, lab, [(float(t), 0.9 if t >= since else 0.0) for t in times])
        )
        out.append((gc.POD_ALLOCATED, lab, [(float(t), 1.0) for t in times]))
    return out


@pytest.fixture(scope="module")
def prom(tmp_path_factory: pytest.TempPathFactory, now: float) -> Iterator[PromServer]:
    history = openmetrics([*_series("team", now), *_series("busy", now)])
    with start_prometheus(tmp_path_factory.mktemp("prom"), history=history) as s:
        yield s


@pytest.fixture(scope="module")
def turned_busy(tmp_path_factory: pytest.TempPathFactory, now: float) -> Iterator[PromServer]:
    history = openmetrics(_series("busy", now, since=now - TURNED_BUSY_S))
    with start_prometheus(tmp_path_factory.mktemp("busy"), history=history) as s:
        yield s


@pytest.fixture
def policy(tmp_path: Path) -> Path:
    path = tmp_path / "policy.yaml"
    path.write_text(f"warning:\n  byKind:\n    Notebook: {PERIOD_S:g}s\n")
    return path


class Cycles:
    """The cluster served for one test, and cycles run against it at chosen times."""

    def __init__(self, cluster: FakeCluster, prom: PromServer, kubeconfig: Path, policy: Path):
        self.cluster, self.prom, self.kubeconfig, self.policy = cluster, prom, kubeconfig, policy
        self.extra: tuple[str, ...] = ()

    def at(self, t: float, prom: PromServer | None = None) -> dict[str, Any]:
        extra = ("--policy-file", str(self.policy), *self.extra)
        return applied_at(t, (prom or self.prom).url, self.kubeconfig, *extra)

    def notebook(self, ns: str) -> dict[str, Any]:
        obj = self.cluster.get(*NOTEBOOKS, "lab", ns)
        assert obj is not None
        return obj

    def notes(self, ns: str) -> dict[str, str]:
        return dict(self.notebook(ns)["metadata"].get("annotations") or {})

    def events(self, reason: str) -> list[dict[str, Any]]:
        return [e for e in self.cluster.all(*EVENTS) if e["reason"] == reason]


def _cycles(
    prom: PromServer, policy: Path, tmp_path: Path, ns: str, now: float
) -> Iterator[Cycles]:
    cluster = FakeCluster()
    cluster.add(*starved_world(now, node_gpus=2), *world("Notebook", ns))
    with served_kubeconfig(cluster, tmp_path / "kubeconfig") as kubeconfig:
        yield Cycles(cluster, prom, kubeconfig, policy)


@pytest.fixture
def team(prom: PromServer, policy: Path, tmp_path: Path, now: float) -> Iterator[Cycles]:
    yield from _cycles(prom, policy, tmp_path, "team", now)


@pytest.fixture
def busy(prom: PromServer, policy: Path, tmp_path: Path, now: float) -> Iterator[Cycles]:
    yield from _cycles(prom, policy, tmp_path, "busy", now)


def _time(stamp: str) -> float:
    return datetime.fromisoformat(stamp.replace("Z", "+00:00")).timestamp()


def _acts(report: dict[str, Any]) -> list[tuple[str, str, str]]:
    return [(o["action"]["kind"], o["action"]["target"], o["outcome"]) for o in report["outcomes"]]


def _skip(report: dict[str, Any], target: str) -> dict[str, Any]:
    return next(s for s in report["plan"]["skipped"] if s["target"] == target)


def _warn(c: Cycles, ns: str, at: float) -> float:
    """Run the warning cycle at `at`: the stop time it records (checked against its Event)."""
    report = c.at(at)
    assert _acts(report) == [("warn", f"{ns}/lab", "applied")], report["outcomes"]
    notes = c.notes(ns)
    stop_at = _time(notes["gpu-reclaim.io/reclaim-after"])
    assert stop_at == math.ceil(at + PERIOD_S)
    assert notes["gpu-reclaim.io/warned-for"] == "prod/llm"
    assert STOPPED not in notes
    [event] = c.events("GpuReclaimScheduled")
    assert event["type"] == "Warning" and event["involvedObject"]["name"] == "lab"
    for said in ("IdleJobForStarvedQueue", "forecast idle=True", "prod/llm", "stop at"):
        assert said in event["message"]
    assert stop_at - _time(event["firstTimestamp"]) >= PERIOD_S
    return stop_at


def test_warned_then_stopped_at_the_original_time_by_a_restarted_controller(
    team: Cycles, now: float
) -> None:
    stop_at = _warn(team, "team", now)
    before = team.at(stop_at - 1)  # a new process, one second early: the countdown holds
    assert _acts(before) == []
    held = _skip(before, "team/lab")
    assert held["reason"] == "ReclaimScheduled" and "in 1s" in held["detail"]
    waiting = _skip(before, "prod/llm")  # its room is coming: no other job is taken
    assert waiting["reason"] == "RoomInFlight" and "team/lab" in waiting["detail"]
    assert _time(team.notes("team")["gpu-reclaim.io/reclaim-after"]) == stop_at
    assert len(team.events("GpuReclaimScheduled")) == 1  # not warned again
    done = team.at(stop_at)
    assert _acts(done) == [("preempt", "team/lab", "applied")], done["outcomes"]
    notes = team.notes("team")
    assert STOPPED in notes and notes["gpu-reclaim.io/room-for"] == "prod/llm"
    assert "gpu-reclaim.io/reclaim-after" not in notes  # the stop clears the warning
    [warned] = team.events("GpuReclaimScheduled")
    assert _time(notes["gpu-reclaim.io/suspended-at"]) - _time(warned["firstTimestamp"]) >= PERIOD_S


def test_keep_until_holds_the_stop_until_it_passes(team: Cycles, now: float) -> None:
    stop_at = _warn(team, "team", now)
    keep = stop_at + 60
    stored = team.notebook("team")
    stored["metadata"]["annotations"]["gpu-reclaim.io/keep-until"] = _rfc(keep)  # the owner
    for t in (stop_at, keep - 1):
        report = team.at(t)
        assert _acts(report) == [], report["outcomes"]
        assert [w["reason"] for w in report["plan"]["warnings"]] == ["KeptByOwner"]
    [kept] = team.events("GpuReclaimKept")  # once, though two processes saw the keep
    assert _rfc(keep) in kept["message"]
    done = team.at(keep)
    assert _acts(done) == [("preempt", "team/lab", "applied")], done["outcomes"]
    assert STOPPED in team.notes("team")


def test_a_notebook_busy_again_is_not_stopped_and_its_warning_is_removed(
    busy: Cycles, turned_busy: PromServer, now: float
) -> None:
    stop_at = _warn(busy, "busy", now)
    report = busy.at(stop_at, turned_busy)  # due, but its GPUs are busy by now
    assert _acts(report) == [("cancel", "busy/lab", "applied")], report["outcomes"]
    cancel = report["outcomes"][0]["action"]
    assert cancel["reason"] == "BusyAgainDuringWarning"
    assert "busy/lab-0 is 90% busy now" in cancel["evidence"]["detail"]
    notes = busy.notes("busy")
    assert not any(k.startswith("gpu-reclaim.io/") for k in notes) and STOPPED not in notes
    [cancelled] = busy.events("GpuReclaimCancelled")
    assert cancelled["involvedObject"]["name"] == "lab"


def test_a_warning_whose_demand_went_away_is_withdrawn(team: Cycles, now: float) -> None:
    stop_at = _warn(team, "team", now)
    pgs = team.cluster.objects[("scheduling.volcano.sh", "v1beta1", "podgroups")]
    del pgs[("prod", "llm")]  # the pending job was deleted
    report = team.at(stop_at)
    assert _acts(report) == [("cancel", "team/lab", "applied")], report["outcomes"]
    assert report["outcomes"][0]["action"]["reason"] == "DemandGone"
    assert "gpu-reclaim.io/reclaim-after" not in team.notes("team")
    assert STOPPED not in team.notes("team")
    assert len(team.events("GpuReclaimCancelled")) == 1


def test_webhooks_that_fail_or_hang_change_nothing_about_the_stop(
    team: Cycles, tmp_path: Path, now: float
) -> None:
    secrets = tmp_path / "webhooks"
    secrets.mkdir()
    team.policy.write_text(
        f"warning:\n  byKind: {{Notebook: {PERIOD_S:g}s}}\n  webhooks:\n"
        "  - {namespace: team, secretKey: team}\n  - {queue: research, secretKey: research}\n"
    )
    team.extra = ("--webhook-secret-dir", str(secrets))
    with receiver(500) as failing, receiver(HANG) as hanging:
        (secrets / "team").write_text(failing.url)
        (secrets / "research").write_text(hanging.url)
        stop_at = _warn(team, "team", now)  # the process waited out both webhooks' tries
        assert len(failing.bodies) == 3  # its tries, each answered 500
        assert hanging.bodies and hanging.bodies[0] == failing.bodies[0]
        text = failing.bodies[0]["text"]
        assert text.startswith("GpuReclaimScheduled: warn team/lab") and "stop at" in text
        assert _acts(team.at(stop_at - 1)) == []
        done = team.at(stop_at)
    assert _acts(done) == [("preempt", "team/lab", "applied")], done["outcomes"]
    assert STOPPED in team.notes("team")


def _rfc(t: float) -> str:
    return datetime.fromtimestamp(t, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
