"""A small builder for planner test worlds: nodes, queues, gangs placed on nodes, pending jobs.

Keeps the planner tests readable: `World().node("n1").queue("be").job("be/a", "be", {"n1": 8},
idle=0.99).pend("ls/x", "ls", 8)` reads as the cluster it builds.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from types import MappingProxyType
from typing import Any

from reclaimer.decisions import Plan
from reclaimer.model import (
    Contention,
    DataQuality,
    Forecast,
    GpuStats,
    Job,
    JobKind,
    LoadHistory,
    MemoryPeaks,
    Node,
    PendingDemand,
    Pod,
    PodBusy,
    PodGpuUsage,
    PodPhase,
    Queue,
    Snapshot,
)
from reclaimer.plan.planner import plan
from reclaimer.policy.settings import Policy

NOW = 1_000_000.0
HOUR = 3600.0
DEVICE_BYTES = 16 * 1024.0**3
LOAD_DAYS = 16  # enough hourly history for the raise gate's load outlook
PEAK_WINDOW = 7 * 86400.0


def fleet_peaks(*gib: float, error: str = "") -> MemoryPeaks:
    """The pods' memory peaks over the week: pod `fleet/p-K` peaked at `gib[K]` GiB."""
    pods = {f"fleet/p-{k}": g * 1024.0**3 for k, g in enumerate(gib)}
    return MemoryPeaks(PEAK_WINDOW, MappingProxyType(pods), error)


def fleet_contention(
    busy: float, pods: int = 20, rows: Mapping[str, PodBusy] | None = None
) -> Contention:
    """A day of `pods` pods `fleet/p-K`, each busy `busy` of it and never beside a busy
    neighbour, plus `rows` (pod key -> its reading)."""
    day = 86400.0
    fleet = {f"fleet/p-{k}": PodBusy(day, busy * day, 0.0) for k in range(pods)}
    return Contention(day, MappingProxyType(fleet | dict(rows or {})))


def forecast(job: str, *, idle: bool, confidence: float, horizon: float = 900.0) -> Forecast:
    return Forecast(
        job=job,
        idle=idle,
        confidence=confidence,
        predicted_idle_seconds=horizon if idle else 0.0,
        horizon_seconds=horizon,
        threshold=0.05,
        method="test",
        samples=100,
        last_sample_at=NOW - 60,
    )


@dataclass
class World:
    now: float = NOW
    queues: list[Queue] = field(default_factory=list)
    jobs: list[Job] = field(default_factory=list)
    pods: list[Pod] = field(default_factory=list)
    nodes: list[Node] = field(default_factory=list)
    pending: list[PendingDemand] = field(default_factory=list)
    forecasts: dict[str, Forecast] = field(default_factory=dict)
    last_actions: dict[str, float] = field(default_factory=dict)
    quality: DataQuality = field(default_factory=lambda: DataQuality(metrics_at=NOW - 30))
    unknown: dict[str, str] = field(default_factory=dict)
    pod_gpus: list[PodGpuUsage] = field(default_factory=list)
    # a week of 20 pods that peaked at 1 GiB: the raise gate's memory budget lets raises pass
    memory_peaks: MemoryPeaks | None = field(default_factory=lambda: fleet_peaks(*[1.0] * 20))
    contention: Contention | None = None  # none read: the contention rule is not applied

    def node(self, name: str, gpus: int = 8, **kw: Any) -> World:
        self.nodes.append(Node(name=name, gpus=gpus, **kw))
        return self

    def queue(self, name: str, **kw: Any) -> World:
        self.queues.append(Queue(name=name, **kw))
        return self

    def job(
        self,
        key: str,
        queue: str,
        pods: dict[str, int] | list[tuple[str, int]],
        *,
        idle: float | None = None,
        busy: bool = False,
        age: float = 2 * HOUR,
        pod_annotations: dict[str, str] | None = None,
        pod_labels: dict[str, str] | None = None,
        profile: str | None = None,
        **kw: Any,
    ) -> World:
        """A running gang with one pod per (node, gpus) entry; `idle=p` adds an idle forecast;
        `profile` (a `nvidia.com/mig-*` resource) makes every slot a MIG instance of it."""
        ns, name = key.split("/")
        placed = list(pods.items()) if isinstance(pods, dict) else pods
        pod_keys = tuple(f"{key}-{i}" for i in range(len(placed)))
        kw.setdefault("min_member", len(placed))
        kw.setdefault("kind", JobKind.PYTORCH_JOB)
        start = self.now - age
        annotations = MappingProxyType(kw.pop("annotations", {}))
        self.jobs.append(
            Job(
                key=key,
                namespace=ns,
                name=name,
                queue=queue,
                gpus=sum(g for _, g in placed),
                start_time=start,
                pods=pod_keys,
                annotations=annotations,
                mig=_mig(profile, sum(g for _, g in placed)),
                **kw,
            )
        )
        for pod_key, (node, gpus) in zip(pod_keys, placed, strict=True):
            self.pods.append(
                Pod(
                    key=pod_key,
                    namespace=ns,
                    name=pod_key.split("/")[1],
                    node=node,
                    gpus=gpus,
                    phase=PodPhase.RUNNING,
                    job=key,
                    start_time=start,
                    annotations=MappingProxyType(pod_annotations or {}),
                    labels=MappingProxyType(pod_labels or {}),
                    mig=_mig(profile, gpus),
                )
            )
        if idle is not None:
            self.forecasts[key] = forecast(key, idle=True, confidence=idle)
        elif busy:
            self.forecasts[key] = forecast(key, idle=False, confidence=0.1)
        return self

    def suspended(self, key: str, queue: str, gpus: int, pods: int = 1, **kw: Any) -> World:
        """A job the reclaimer suspended (its pods are gone)."""
        ns, name = key.split("/")
        self.jobs.append(
            Job(
                key=key,
                kind=JobKind.PYTORCH_JOB,
                namespace=ns,
                name=name,
                queue=queue,
                gpus=gpus,
                min_member=pods,
                suspended=True,
                suspended_by_reclaimer=True,
                **kw,
            )
        )
        return self

    def stopping(
        self,
        key: str,
        queue: str,
        pods: dict[str, int],
        *,
        room_for: str | None = None,
        ago: float = 60.0,
        **kw: Any,
    ) -> World:
        """A job stopped `ago` seconds ago (by the reclaimer for `room_for`, if given) whose
        pods still hold their GPUs: its operator has not deleted them yet."""
        kw.setdefault("suspended_by_reclaimer", room_for is not None)
        self.job(
            key, queue, pods, suspended=True, room_for=room_for, stopped_at=self.now - ago, **kw
        )
        if room_for is not None:
            self.last_actions[key] = self.now - ago
        return self

    def deleting(self, pod_key: str) -> World:
        """Mark a pod as being deleted (deletionTimestamp set, still bound)."""
        self.pods = [replace(p, releasing=True) if p.key == pod_key else p for p in self.pods]
        return self

    def unknown_usage(self, key: str, why: str = "3 of 15 samples missing") -> World:
        self.unknown[key] = why
        return self

    def pend(self, key: str, queue: str, gpus: int, pods: int = 1, **kw: Any) -> World:
        """A pending job; it has waited an hour (past `reclaimAfter`) unless `since` says so."""
        kw.setdefault("since", self.now - HOUR)
        self.pending.append(PendingDemand(queue=queue, job=key, gpus=gpus, min_member=pods, **kw))
        return self

    def acted(self, key: str, ago: float) -> World:
        self.last_actions[key] = self.now - ago
        return self

    def stats(self, node: str, *usage: tuple[float, float]) -> World:
        """Replace `node`'s GPU stats with (utilization, memory ratio) per GPU, of 16 GiB
        devices, and its load history with LOAD_DAYS of hourly load steady at their mean."""
        mean = sum(u for u, _ in usage) / len(usage) if usage else 0.0
        steady = (mean,) * (LOAD_DAYS * 24)
        self.nodes = [n if n.name != node else _with_stats(n, usage) for n in self.nodes]
        return self.load(node, steady)

    def load(self, node: str, values: Sequence[float], step: float = 3600.0) -> World:
        """Replace `node`'s load history: `values` at `step`, the last one ending now."""
        history = LoadHistory(self.now - step * len(values), step, tuple(values))
        self.nodes = [n if n.name != node else replace(n, load=history) for n in self.nodes]
        return self

    def usage(
        self, pod: str, node: str, gpu: str, busy: float | None, memory: float | None = None
    ) -> World:
        """A per-pod device reading: `pod` busy (and holding `memory` bytes) on `gpu`."""
        self.pod_gpus.append(PodGpuUsage(pod, node, gpu, busy, memory))
        return self

    def snapshot(self) -> Snapshot:
        return Snapshot(
            taken_at=self.now,
            queues=tuple(self.queues),
            jobs=tuple(self.jobs),
            pods=tuple(self.pods),
            nodes=tuple(self.nodes),
            pending=tuple(self.pending),
            quality=self.quality,
            last_actions=MappingProxyType(dict(self.last_actions)),
            unknown_usage=MappingProxyType(dict(self.unknown)),
            pod_gpus=tuple(self.pod_gpus),
            memory_peaks=self.memory_peaks,
            contention=self.contention,
        )

    def plan(self, policy: Policy | None = None) -> Plan:
        return plan(self.snapshot(), self.forecasts, policy or Policy(), self.now)


def _mig(profile: str | None, n: int) -> MappingProxyType[str, int]:
    return MappingProxyType({profile: n} if profile else {})


def _with_stats(node: Node, usage: tuple[tuple[float, float], ...]) -> Node:
    return replace(
        node,
        gpu_stats=tuple(
            GpuStats(u, m, f"GPU-{node.name}-{i}", m * DEVICE_BYTES, DEVICE_BYTES)
            for i, (u, m) in enumerate(usage)
        ),
    )


def starved_world() -> World:
    """Two 8-GPU nodes; `be` (reclaimable) holds both; `ls` (guaranteed, 8 deserved) waits."""
    return (
        World()
        .node("n1")
        .node("n2")
        .queue("be", deserved_gpus=8.0)
        .queue("ls", deserved_gpus=8.0, reclaimable=False)
    )


def contested_world(idle: float = 0.99) -> World:
    """`starved_world` taken up: `be/idle` (forecast idle with `idle`) on n1 and `be/busy` on n2
    hold all 16 GPUs while `ls/x` (8 GPUs) waits: one preemption, one skip."""
    return (
        starved_world()
        .job("be/idle", "be", {"n1": 8}, idle=idle)
        .job("be/busy", "be", {"n2": 8}, busy=True)
        .pend("ls/x", "ls", 8)
    )
