"""Actions and an actuator run for the Kubernetes tests: the plan side of a cycle, by hand."""

from __future__ import annotations

from typing import Any

from fakeapi import FakeCluster

from reclaimer.decisions import Action, ActionKind, ActionResult, Evidence, Reason
from reclaimer.kube.read import read_cluster_sync
from reclaimer.model import Forecast
from reclaimer.policy.settings import Policy
from reclaimer.runtime.actuator import Actuator

NOW = 1_796_000_000.0  # 2026-11-30T00:53:20Z, after every fixture timestamp plus cool-downs
PYT = ("kubeflow.org", "v1", "pytorchjobs")
VCJ = ("batch.volcano.sh", "v1alpha1", "jobs")
CMD = ("bus.volcano.sh", "v1alpha1", "commands")
POD = ("", "v1", "pods")
NODE = ("", "v1", "nodes")
CM = ("", "v1", "configmaps")
EVT = ("", "v1", "events")


def forecast(job: str) -> Forecast:
    return Forecast(job, True, 0.97, 1800.0, 900.0, 0.05, "test", 60)


def preempt(target: str) -> Action:
    ev = Evidence(forecast=forecast(target), for_pending="prod/llm-finetune", gpus_freed=2)
    return Action(ActionKind.PREEMPT, target, Reason.IDLE_FOR_STARVED_QUEUE, ev)


def resume(target: str) -> Action:
    return Action(ActionKind.RESUME, target, Reason.QUEUE_HAS_ROOM, Evidence(for_queue="research"))


def reshape(node: str, old: int, new: int) -> Action:
    return Action(ActionKind.RESHAPE, node, Reason.NODE_UNDERUSED, Evidence(), None, old, new)


def run(
    api: Any,
    actions: list[Action],
    *,
    dry_run: bool = False,
    policy: Policy | None = None,
    now: float = NOW,
    **kw: Any,
) -> list[ActionResult]:
    view = read_cluster_sync(api, now=now)
    act = Actuator(api, clock=lambda: now, dry_run=dry_run, policy=policy, **kw)
    return act.apply(actions, view)


def events_for(cluster: FakeCluster, name: str) -> list[dict[str, Any]]:
    return [e for e in cluster.all(*EVT) if e["involvedObject"]["name"] == name]
