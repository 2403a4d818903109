"""The control loop against a scripted Prometheus: no actions on bad data, no crash on errors.

The planner here is a fixed stand-in that always proposes one preemption: these tests are about
what the controller lets through to the actuator, not about planning (tests/reclaimer/plan/
and the end-to-end test use the real planner).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Mapping

import pandas as pd
import pytest
from clusterviews import job_with_pods, view
from fakeprom import NEVER_S, Reply, fake_prometheus, matrix, vector

import gpu_contract as gc
from reclaimer.decisions import Action, ActionKind, ActionResult, Evidence, Outcome, Plan, Reason
from reclaimer.model import ClusterView, DataQuality, Forecast, Snapshot
from reclaimer.policy.settings import Policy
from reclaimer.prometheus.client import PromClient, RetryPolicy
from reclaimer.prometheus.history import HistoryParams
from reclaimer.prometheus.sharing import load_query
from reclaimer.report.cycle import CycleResult
from reclaimer.runtime.controller import Controller, ControllerConfig, gate
from reclaimer.runtime.telemetry import ReclaimerMetrics

NOW = 1_800_000_000.0
# Retries at once; a timeout only a hung fake reaches (the answers come at the machine's pace).
FAST = RetryPolicy(attempts=2, base_delay=0.01, max_delay=0.01, timeout=60.0)
QUICK = RetryPolicy(attempts=2, base_delay=0.01, max_delay=0.01, timeout=0.5)  # never answered
IDLE = view([job_with_pods("team-b", "idle-b", "qb", [("b-0", 1)])], taken_at=NOW)


def prom_route(newest: float = NOW - 30, warnings: tuple[str, ...] = ()) -> Callable:
    def route(path: str, form: dict[str, str]) -> Reply:
        q = form["query"]
        extra = {"warnings": list(warnings)} if warnings else {}
        if path.endswith("query_range"):
            start, end = float(form["start"]), float(form["end"])
            pts = [(start + i * 60.0, 0.0) for i in range(int((end - start) // 60) + 1)]
            return Reply(matrix(({"namespace": "team-b", "pod": "b-0"}, pts), **extra))
        if "timestamp(" in q:
            return Reply(vector(({}, newest), at=NOW))
        return Reply(vector(at=NOW))  # recording-rule probe, node stats: nothing

    return route


def one_preemption(
    snapshot: Snapshot, forecasts: Mapping[str, Forecast], policy: Policy, now: float
) -> Plan:
    evidence = Evidence(for_pending="team-a/wait", gpus_freed=1, detail="stand-in")
    return Plan(
        now, (Action(ActionKind.PREEMPT, "team-b/idle-b", Reason.IDLE_FOR_STARVED_QUEUE, evidence),)
    )


def no_forecasts(history: pd.DataFrame, policy: Policy, now: float) -> dict[str, Forecast]:
    return {}


class RecordingActuator:
    def __init__(self) -> None:
        self.plans: list[Plan] = []

    def apply(self, plan: Plan, view: ClusterView) -> list[ActionResult]:
        self.plans.append(plan)
        return [ActionResult(a, Outcome.DRY_RUN) for a in plan.actions]

    def warn(self, warnings: object, view: ClusterView) -> int:
        return 0

    def settle(self, view: ClusterView, results: object) -> list[str]:
        return []


def make(
    url: str,
    actuator: RecordingActuator,
    read: Callable[[], ClusterView] = lambda: IDLE,
    clock: Callable[[], float] = lambda: NOW,
    retry: RetryPolicy = FAST,
) -> tuple[Controller, ReclaimerMetrics, PromClient]:
    metrics = ReclaimerMetrics()
    prom = PromClient(url, retry)
    c = Controller(
        read_cluster=read,
        prom=prom,
        policy=Policy(),
        forecaster=no_forecasts,
        planner=one_preemption,
        actuator=actuator,
        metrics=metrics,
        clock=clock,
        config=ControllerConfig(history=HistoryParams(window=3600.0)),
    )
    return c, metrics, prom


def sample(metrics: ReclaimerMetrics, name: str, **labels: str) -> float:
    value = metrics.registry.get_sample_value(name, labels)
    return 0.0 if value is None else value


async def test_fresh_complete_data_reaches_the_actuator() -> None:
    act = RecordingActuator()
    async with fake_prometheus(route=prom_route()) as fake:
        c, m, prom = make(fake.url, act)
        async with prom:
            report = await c.cycle()
    assert report.result is CycleResult.SUCCESS and report.acted
    assert [a.target for p in act.plans for a in p.actions] == ["team-b/idle-b"]
    assert sample(m, "gpu_reclaimer_cycles_total", result="success") == 1
    labels = {"kind": "preempt", "reason": "IdleJobForStarvedQueue"}
    assert sample(m, "gpu_reclaimer_actions_planned_total", **labels) == 1
    assert sample(m, "gpu_reclaimer_actions_applied_total", **labels) == 1
    assert sample(m, "gpu_reclaimer_last_success_timestamp_seconds") == NOW
    assert c.ready


@pytest.mark.parametrize(
    ("route", "reason"),
    [
        pytest.param(prom_route(newest=NOW - 3600), Reason.STALE_DATA, id="stale"),
        pytest.param(prom_route(warnings=("store down",)), Reason.INCOMPLETE_DATA, id="partial"),
    ],
)
async def test_untrusted_data_means_no_actions(route: Callable, reason: Reason) -> None:
    act = RecordingActuator()
    async with fake_prometheus(route=route) as fake:
        c, m, prom = make(fake.url, act)
        async with prom:
            report = await c.cycle()
    assert report.result is CycleResult.SKIPPED and not report.acted
    assert act.plans == []
    assert report.plan is not None and report.plan.actions == ()
    assert [s.reason for s in report.plan.skipped if s.target == "team-b/idle-b"] == [reason]
    assert sample(m, "gpu_reclaimer_cycles_total", result="skipped") == 1
    assert sample(m, "gpu_reclaimer_last_success_timestamp_seconds") == 0


async def test_prometheus_down_is_a_skipped_cycle_not_a_crash() -> None:
    async with fake_prometheus() as fake:
        url = fake.url  # closed when the block ends: connection refused
    act = RecordingActuator()
    c, m, prom = make(url, act)
    async with prom:
        report = await c.cycle()
    assert report.result is CycleResult.SKIPPED and report.plan is None
    assert "unreachable" in report.message
    assert act.plans == []
    assert sample(m, "gpu_reclaimer_cycles_total", result="skipped") == 1


@pytest.mark.parametrize(
    ("reply", "message"),
    [
        pytest.param(
            Reply({"status": "error", "errorType": "execution", "error": "too many samples"}, 422),
            "too many samples",
            id="query-error",
        ),
        pytest.param(Reply(vector(at=NOW), delay=NEVER_S), "timeout", id="never-answers"),
        pytest.param(Reply("<html>502</html>", 502), "HTTP 502", id="proxy-error"),
    ],
)
async def test_prometheus_errors_and_slowness_are_skipped_cycles(
    reply: Reply, message: str
) -> None:
    async with fake_prometheus(default=reply) as fake:
        act = RecordingActuator()
        c, m, prom = make(fake.url, act, retry=QUICK if reply.delay else FAST)
        async with prom:
            report = await c.cycle()
    assert report.result is CycleResult.SKIPPED and act.plans == []
    assert message in report.message
    assert sample(m, "gpu_reclaimer_cycles_total", result="skipped") == 1


async def test_an_exception_is_counted_and_the_next_cycle_runs() -> None:
    reads = iter([RuntimeError("API server said 500"), IDLE])

    def read() -> ClusterView:
        item = next(reads)
        if isinstance(item, Exception):
            raise item
        return item

    act = RecordingActuator()
    async with fake_prometheus(route=prom_route()) as fake:
        c, m, prom = make(fake.url, act, read=read)
        async with prom:
            first = await c.cycle()
            assert not c.ready
            second = await c.cycle()
    assert (first.result, second.result) == (CycleResult.ERROR, CycleResult.SUCCESS)
    assert sample(m, "gpu_reclaimer_cycles_total", result="error") == 1
    assert sample(m, "gpu_reclaimer_cycles_total", result="success") == 1
    assert c.ready


async def test_loop_stops_when_asked_and_counts_cycles() -> None:
    act = RecordingActuator()
    async with fake_prometheus(route=prom_route()) as fake:
        c, m, prom = make(fake.url, act)
        stop = asyncio.Event()

        async def stop_after_two() -> None:
            while sample(m, "gpu_reclaimer_cycles_total", result="success") < 2:
                await asyncio.sleep(0.01)
            stop.set()

        async with prom:
            await asyncio.gather(c.run(0.01, stop), stop_after_two())
    assert sample(m, "gpu_reclaimer_cycles_total", result="success") >= 2


@pytest.mark.parametrize(
    ("quality", "acts"),
    [
        pytest.param(DataQuality(NOW - 10), True, id="fresh-complete"),
        pytest.param(DataQuality(None), False, id="no-samples"),
        pytest.param(DataQuality(NOW - 301), False, id="older-than-max-age"),
        pytest.param(DataQuality(NOW - 10, complete=False, problems=("x",)), False, id="partial"),
    ],
)
def test_gate(quality: DataQuality, acts: bool) -> None:
    plan = one_preemption(None, {}, Policy(), NOW)  # type: ignore[arg-type]
    gated, why = gate(plan, quality, NOW, Policy(max_data_age_seconds=300.0))
    assert (gated == plan) is acts and (why is None) is acts
    assert len(gated.actions) + len(gated.skipped) == 1


async def test_later_cycles_fetch_only_the_new_tail_and_count_unforecast_jobs() -> None:
    times = iter([NOW, NOW, NOW + 120, NOW + 120])
    act = RecordingActuator()
    async with fake_prometheus(route=prom_route()) as fake:
        c, m, prom = make(fake.url, act, clock=lambda: next(times))
        async with prom:
            await c.cycle()
            first = [f for p, f in fake.requests if p.endswith("query_range")]
            fake.requests.clear()
            await c.cycle()
            second = [f for p, f in fake.requests if p.endswith("query_range")]
    # the node load is read once an hour: in the first cycle, not in the second
    assert [f["query"] for f in first].count(load_query()) == 1
    assert [f["query"] for f in second].count(load_query()) == 0
    first = [f for f in first if f["query"] != load_query()]
    assert float(first[0]["start"]) == NOW - 3600.0  # the whole window first (NOW is on the grid)
    assert float(second[0]["start"]) == NOW - 5 * 60.0  # then the tail and 5 re-read steps
    assert sample(m, "gpu_reclaimer_forecasts", outcome="unknown") == 1  # no forecast at all


async def test_recording_rules_are_probed_again_until_they_cover_the_window() -> None:
    probes: list[float] = []
    ranges: list[tuple[str, float]] = []
    covered = {"now": False}
    clock = {"t": NOW}

    def route(path: str, form: dict[str, str]) -> Reply:
        q = form["query"]
        raw = prom_route(newest=clock["t"] - 30)
        if q.startswith("count("):  # the recording-rule probe
            probes.append(float(form["time"]))
            return Reply(vector(({}, 1.0), at=NOW) if covered["now"] else vector(at=NOW))
        if path.endswith("query_range") and q != load_query():
            ranges.append((q, float(form["start"])))
        return raw(path, form)

    async with fake_prometheus(route=route) as fake:
        c, _, prom = make(fake.url, RecordingActuator(), clock=lambda: clock["t"])
        async with prom:
            for step, rules_ready in [(0, False), (600, False), (3600, True), (3660, True)]:
                clock["t"] = NOW + step
                covered["now"] = rules_ready
                await c.cycle()
    assert probes == [NOW, NOW + 3600]  # at start, then an hour later; never once they cover
    recorded = [gc.RECORDED_POD_UTILIZATION_5M in q for q, _ in ranges]
    assert recorded[:2] == [False, False] and all(recorded[2:])
    first_recorded_start = next(s for q, s in ranges if gc.RECORDED_POD_UTILIZATION_5M in q)
    assert first_recorded_start <= NOW + 60  # the whole hour's window, read again from the rules
