"""The control loop: one snapshot, one plan, one batch of writes per cycle; never a crash-loop.

A cycle reads the cluster (a `ClusterView`, blocking calls in a thread) and Prometheus
(`read_metrics`), joins them into a `Snapshot` with its `DataQuality`, forecasts, plans, and hands
the plan to the actuator (which does a server-side dry-run unless `--apply`). Then it updates the
metrics and keeps the `CycleReport` that `/plan` serves.

Safety gate: when the data is incomplete (a failed or partial query) or stale (newest sample older
than the policy's `maxDataAge`), every planned action becomes a `Skip` with `IncompleteData` /
`StaleData` and nothing reaches the actuator, whatever the planner said; the cycle counts as
`skipped`. Prometheus unreachable is `skipped` as well. Any exception is logged and counted as
`error`, and the loop goes on. A replica that is not the leader plans but never acts.
Deadline: the reads (cluster and Prometheus) must finish within `cycle_timeout`, or the cycle ends
as `error` saying so, with nothing planned or acted on. Actions are never cut short (a stop
abandoned between its steps is worse than a late one); each of their API calls has its own
deadline (`reclaimer.kube.client`). After every cycle, whatever its result, `heartbeat()` tells
`/healthz` that the loop is alive (`reclaimer.runtime.liveness`). Policy: each cycle starts by
checking the policy file (`reclaimer.runtime.policy_file`): a valid new version is in force from
that cycle on; an invalid one is refused (log, `gpu_reclaimer_policy_rejected`, a Warning Event)
and the last good policy stays.
Forecast accuracy: idle forecasts are remembered and judged after their horizon
(`forecast_check`). The clock is injected; nothing here reads the wall time itself.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, fields, replace
from types import MappingProxyType
from typing import Protocol

from reclaimer.decisions import ActionKind, ActionResult, Plan, Reason, Skip
from reclaimer.forecast import checks as forecast_check
from reclaimer.forecast.history import History
from reclaimer.forecast.methods import UNDECIDED_METHODS
from reclaimer.kube.read import ClusterReadError
from reclaimer.model import ClusterView, DataQuality, Forecast, PodPhase, Snapshot
from reclaimer.plan.capacity import releasing
from reclaimer.plan.planner import data_gate
from reclaimer.plan.raises import REFUSALS
from reclaimer.policy.settings import Policy
from reclaimer.prometheus.client import PromClient
from reclaimer.prometheus.contention import DCGM_UNREAD
from reclaimer.prometheus.history import HistoryParams, MetricsSource
from reclaimer.prometheus.reads import (
    LoadRead,
    MetricsRead,
    MetricsUnavailable,
    probe_recorded,
    read_metrics,
)
from reclaimer.report.cycle import CycleReport, CycleResult
from reclaimer.report.fleet import summarize
from reclaimer.report.usage import recent_usage
from reclaimer.runtime.policy_file import PolicyFeed, changed_settings
from reclaimer.runtime.telemetry import ReclaimerMetrics

log = logging.getLogger("gpu_reclaimer.controller")

Forecaster = Callable[[History, Policy, float], Mapping[str, Forecast]]
Planner = Callable[[Snapshot, Mapping[str, Forecast], Policy, float], Plan]


class Applier(Protocol):
    """The actuator's face as the controller sees it (`reclaimer.runtime.actuator.Actuator`)."""

    def apply(self, plan: Plan, view: ClusterView) -> Sequence[ActionResult]: ...

    def warn(self, warnings: Sequence[Skip], view: ClusterView) -> int: ...

    def settle(self, view: ClusterView, results: Sequence[ActionResult]) -> Sequence[str]: ...


@dataclass(frozen=True)
class ControllerConfig:
    source: MetricsSource = MetricsSource.GPU_RECLAIM
    history: HistoryParams = field(default_factory=HistoryParams)
    dry_run: bool = True
    reprobe_seconds: float = 3600.0  # while the recording rules do not cover the window yet
    cycle_timeout: float = 300.0  # the reads' deadline (--cycle-timeout); see the docstring


def build_snapshot(view: ClusterView, read: MetricsRead) -> Snapshot:
    """Join the cluster view and the measurements; pure."""
    load = read.load.nodes if read.load is not None else {}
    nodes = tuple(
        replace(
            n,
            gpu_stats=read.node_stats.get(n.name, n.gpu_stats),
            load=load.get(n.name, n.load),
        )
        for n in view.nodes
    )
    seen = {f.name: getattr(view, f.name) for f in fields(ClusterView)}
    return Snapshot(
        **{**seen, "nodes": nodes},
        quality=DataQuality(read.metrics_at, read.complete, read.problems),
        unknown_usage=MappingProxyType(dict(read.unknown)),
        pod_gpus=read.pod_gpus,
        memory_peaks=read.load.peaks if read.load is not None else None,
        contention=read.load.contention if read.load is not None else None,
    )


def gate(plan: Plan, quality: DataQuality, now: float, policy: Policy) -> tuple[Plan, str | None]:
    """Turn every action into a skip when the data cannot be trusted (the planner's own
    `data_gate` decides, whatever planner produced `plan`); pure."""
    stop = data_gate(quality, policy, now)
    if stop is None:
        return plan, None
    why = stop.detail
    skips = tuple(Skip(a.target, stop.reason, f"{a.kind} withheld: {why}") for a in plan.actions)
    return replace(plan, actions=(), skipped=plan.skipped + skips), why


def reclaimed_gpus(view: ClusterView) -> int:
    """GPUs the reclaimer's completed stops hold free: jobs it stopped whose stop took effect
    and whose pods hold no device any more. A record alone is not a stop (one cut short, or an
    AbortJob Volcano has not carried out), nor is a job whose pods still terminate; pure."""
    holding = (PodPhase.RUNNING, PodPhase.PENDING)
    bound = {p.job for p in view.pods if p.job and p.node and p.gpus > 0 and p.phase in holding}
    return sum(
        j.gpus for j in view.jobs if j.suspended and j.suspended_by_reclaimer and j.key not in bound
    )


class Controller:
    def __init__(
        self,
        *,
        read_cluster: Callable[[], ClusterView],
        prom: PromClient,
        policy: Policy,
        forecaster: Forecaster,
        planner: Planner,
        actuator: Applier | None,
        metrics: ReclaimerMetrics,
        clock: Callable[[], float],
        config: ControllerConfig = ControllerConfig(),
        is_leader: Callable[[], bool] = lambda: True,
        heartbeat: Callable[[], None] = lambda: None,
        policy_feed: PolicyFeed | None = None,
    ) -> None:
        self._read_cluster = read_cluster
        self._prom = prom
        self._policy = policy
        self._forecaster = forecaster
        self._planner = planner
        self._actuator = actuator
        self._metrics = metrics
        self._clock = clock
        self._config = config
        self._is_leader = is_leader
        self._heartbeat = heartbeat
        self._policy_feed = policy_feed
        self._recorded: bool | None = None  # recording rules cover the window (probed)
        self._probed_at = float("-inf")
        self._checks: tuple[forecast_check.PendingCheck, ...] = ()
        self._pods: History | None = None  # per-pod history kept between cycles
        self._load: LoadRead | None = None  # node load histories, re-read hourly
        self.last: CycleReport | None = None
        self.ready = False  # set after the first cycle that completes (any result but error)
        metrics.dry_run.set(1 if config.dry_run else 0)

    async def cycle(self) -> CycleReport:
        """Run one cycle; never raises (except cancellation)."""
        start = self._clock()
        try:
            await self._reload_policy()
            report = await self._cycle(start)
        except asyncio.CancelledError:
            raise
        except ClusterReadError as err:  # an answer the API gave (403, 429, 5xx): one line
            log.error("cycle failed, no actions: cluster unreadable: %s", err)
            report = CycleReport(CycleResult.ERROR, start, 0.0, f"cycle failed: {err}")
        except Exception as err:  # the loop must survive anything one cycle hits
            log.exception("cycle failed")
            report = CycleReport(CycleResult.ERROR, start, 0.0, f"cycle failed: {err!r}")
        report = replace(report, duration=max(0.0, self._clock() - start))
        self._account(report)
        self.last = report
        self.ready = self.ready or report.result is not CycleResult.ERROR
        self._heartbeat()
        return report

    async def _reload_policy(self) -> None:
        """Take a changed policy file's new version, or keep the policy in force and say why."""
        feed = self._policy_feed
        change = await asyncio.to_thread(feed.check) if feed is not None else None
        if feed is None or change is None:
            return
        if change.policy is None:
            log.error("%s\nkeeping the policy in force until the file changes", change.problem)
            self._metrics.policy_rejected.set(1)
            await asyncio.to_thread(feed.rejected, change.problem)
            return
        changed = changed_settings(self._policy, change.policy)
        self._policy = policy = change.policy
        history = replace(
            self._config.history,
            max_age=policy.max_data_age_seconds,
            horizon=policy.horizon_seconds,
        )
        self._config = replace(self._config, history=history)
        feed.accepted(policy)
        self._metrics.policy_rejected.set(0)
        log.info("policy reloaded; changed: %s", ", ".join(changed) or "nothing")

    async def _probe_recorded(self, now: float) -> None:
        """Probe the recording rules first, then hourly until they cover the whole window.

        Once they do, the history switches to them for good, and the kept raw history is
        dropped so that the next read fetches the whole window from one kind of series.
        """
        if self._recorded or now - self._probed_at < self._config.reprobe_seconds:
            return
        found = self._config.source is MetricsSource.GPU_RECLAIM and await probe_recorded(
            self._prom, now, self._config.history
        )
        self._probed_at = now
        if found and self._recorded is not None:
            log.info("recording rules now cover the history window: reading them from now on")
            self._pods = None
        self._recorded = found

    async def _observe(self, now: float) -> tuple[ClusterView, MetricsRead] | CycleReport:
        """The cycle's reads: the cluster, then Prometheus; a `CycleReport` when skipped."""
        view = await asyncio.to_thread(self._read_cluster)
        for problem in view.problems:
            log.warning("cluster: %s", problem)
        before = self._prom.requests
        try:
            await self._probe_recorded(now)
            read = await read_metrics(
                self._prom,
                view,
                now,
                self._config.history,
                self._config.source,
                recorded=self._recorded,
                previous=self._pods,
                load=self._load,
            )
        except MetricsUnavailable as err:
            log.warning("cycle skipped, no actions: %s", err)
            requests = self._prom.requests - before
            return CycleReport(CycleResult.SKIPPED, now, 0.0, str(err), requests=requests)
        self._recorded, self._pods, self._load = read.recorded, read.pod_history, read.load
        if read.load is not None and read.load.error:
            log.warning("raises refused this hour: %s", read.load.error)
        if read.load is not None and read.load.peaks is not None and read.load.peaks.error:
            log.warning("raises refused this hour: pods' memory peaks %s", read.load.peaks.error)
        contention = read.load.contention if read.load is not None else None
        if contention is not None and contention.error and contention is not DCGM_UNREAD:
            log.warning("pods' contention unknown this hour: %s", contention.error)
        return view, read

    async def _cycle(self, now: float) -> CycleReport:
        limit = self._config.cycle_timeout
        try:
            observed = await asyncio.wait_for(self._observe(now), limit)
        except TimeoutError:
            why = (
                f"cycle deadline: the cluster and Prometheus reads did not finish within "
                f"{limit:g}s (--cycle-timeout); nothing planned or acted on"
            )
            log.error("cycle failed: %s", why)
            return CycleReport(CycleResult.ERROR, now, 0.0, why)
        if isinstance(observed, CycleReport):
            return observed
        view, read = observed
        snapshot = build_snapshot(view, read)
        forecasts = self._forecaster(read.jobs, self._policy, now)
        self._track_forecasts(forecasts, read.jobs, view, now)
        plan, withheld = gate(
            self._planner(snapshot, forecasts, self._policy, now),
            snapshot.quality,
            now,
            self._policy,
        )
        result, message = CycleResult.SUCCESS, f"{len(plan.actions)} action(s) planned"
        if withheld is not None:
            log.warning("cycle skipped, no actions: %s", withheld)
            result, message = CycleResult.SKIPPED, withheld
        acted = bool(plan.actions) and self._actuator is not None and self._is_leader()
        outcomes = await self._act(plan, view) if acted else ()
        if self._actuator is not None and self._is_leader():
            await asyncio.to_thread(self._actuator.settle, view, outcomes)
        await self._warn(plan, view)
        self._count_safety(snapshot, plan)
        self._count_reclaimed(view, now)
        stats_window = self._config.history.stats_window
        summary = summarize(view, read.pod_history, now, stats_window, self._policy.threshold)
        usage = recent_usage(view, read.jobs, read.unknown, now)
        return CycleReport(
            result, now, 0.0, message, plan, snapshot.quality, summary, forecasts, outcomes,
            acted, read.requests, usage,
        )  # fmt: skip

    async def _warn(self, plan: Plan, view: ClusterView) -> None:
        for w in plan.warnings:
            log.warning("%s %s: %s", w.reason, w.target, w.detail)
        notices = [s for s in plan.skipped if s.reason in REFUSALS]  # raises refused: Events
        told = (*plan.warnings, *notices)
        if told and self._actuator is not None and self._is_leader():
            await asyncio.to_thread(self._actuator.warn, told, view)

    def _count_safety(self, snapshot: Snapshot, plan: Plan) -> None:
        m = self._metrics
        m.gpus_releasing.set(sum(releasing(snapshot).by_node.values()))
        m.releases_overdue.set(sum(w.reason is Reason.RELEASE_OVERDUE for w in plan.warnings))
        m.usage_unknown.set(len(snapshot.unknown_usage))

    async def _act(self, plan: Plan, view: ClusterView) -> tuple[ActionResult, ...]:
        if self._actuator is None:
            return ()
        return tuple(await asyncio.to_thread(self._actuator.apply, plan, view))

    def _track_forecasts(
        self,
        forecasts: Mapping[str, Forecast],
        history: History,
        view: ClusterView,
        now: float,
    ) -> None:
        self._checks, results = forecast_check.check(self._checks, history, now)
        for _, result in results:
            self._metrics.forecast_checks.labels(result=str(result)).inc()
        self._checks = forecast_check.remember(self._checks, forecasts, now)
        idle = sum(1 for f in forecasts.values() if f.idle)
        undecided = sum(1 for f in forecasts.values() if f.method in UNDECIDED_METHODS)
        holding = {p.job for p in view.pods if p.job and p.gpus > 0}
        unforecast = len(holding - forecasts.keys())  # no usable series at all
        busy = len(forecasts) - idle - undecided
        self._metrics.set_forecasts(idle, busy, undecided + unforecast)

    def _count_reclaimed(self, view: ClusterView, now: float) -> None:
        """GPU-seconds held free since the last cycle (would-be ones in dry-run)."""
        prev = self.last
        if prev is None or prev.plan is None:
            return
        if self._config.dry_run:
            gpus = sum(
                a.evidence.gpus_freed for a in prev.plan.actions if a.kind is ActionKind.PREEMPT
            )
        else:
            gpus = reclaimed_gpus(view)
        self._metrics.reclaimed_gpu_seconds.inc(max(0.0, gpus * (now - prev.at)))

    def _account(self, report: CycleReport) -> None:
        m = self._metrics
        m.cycles.labels(result=str(report.result)).inc()
        m.cycle_duration.set(report.duration)
        m.is_leader.set(1 if self._is_leader() else 0)
        if report.result is CycleResult.SUCCESS:
            m.last_success.set(report.at + report.duration)
        for action in report.plan.actions if report.plan else ():
            m.count_action(m.planned, action)
        for result in report.outcomes:
            m.count_action(m.applied if result.outcome.done else m.failed, result.action)

    async def run(self, interval: float, stop: asyncio.Event) -> None:
        """Cycle every `interval` seconds until `stop` is set; a cycle in flight finishes."""
        while not stop.is_set():
            report = await self.cycle()
            log.info("cycle %s in %.2fs: %s", report.result, report.duration, report.message)
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(stop.wait(), timeout=interval)
