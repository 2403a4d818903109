"""Planner invariants over random clusters (hypothesis): safety, limits, accounting, determinism."""

from __future__ import annotations

import random
from dataclasses import replace
from types import MappingProxyType

from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st
from planworld import NOW, forecast

from reclaimer.decisions import Action, ActionKind, Plan, Reason
from reclaimer.model import (
    DataQuality,
    Forecast,
    GpuStats,
    Job,
    JobKind,
    Node,
    PendingDemand,
    Pod,
    PodPhase,
    Queue,
    Snapshot,
)
from reclaimer.plan.capacity import is_opted_out
from reclaimer.plan.planner import plan
from reclaimer.plan.victims import min_runtime_seconds
from reclaimer.policy.settings import Limits, Policy

QUEUES = ("q0", "q1", "q2", "q3")
BELOW_TWO = {Reason.PODS_CRASHED, Reason.PODS_DO_NOT_FIT, Reason.WHOLE_GPUS_FOR_PENDING}
ANNOTATIONS = (
    {},
    {},
    {},
    {},
    {},
    {},
    {},
    {},
    {"volcano.sh/preemptable": "false"},
    {"gpu-reclaim.io/preemptable": "false"},
    {"volcano.sh/cooldown-time": "3h"},
    {"volcano.sh/cooldown-time": "60s"},
    {"volcano.sh/cooldown-time": "junk"},
)


@st.composite
def queues(draw: st.DrawFn) -> tuple[Queue, ...]:
    return tuple(
        Queue(
            name=name,
            weight=draw(st.integers(1, 4)),
            deserved_gpus=draw(st.sampled_from([None, 16.0, 64.0, 8.0, 4.0, 0.0])),
            guarantee_gpus=draw(st.sampled_from([0.0, 0.0, 4.0])),
            capability_gpus=draw(st.sampled_from([None, None, 32.0, 8.0])),
            reclaimable=draw(st.sampled_from([True, True, True, False])),
        )
        for name in QUEUES
    )


@st.composite
def nodes(draw: st.DrawFn, contended: bool) -> tuple[Node, ...]:
    """A few whole 8-GPU nodes when `contended`, else mixed sizes and time-slice replicas."""
    out = []
    for i in range(draw(st.integers(2, 4) if contended else st.integers(1, 5))):
        gpus = 8 if contended else draw(st.sampled_from([2, 4, 8]))
        stats = draw(
            st.lists(
                st.tuples(st.floats(0, 1), st.floats(0, 1)).map(lambda t: GpuStats(*t)),
                max_size=gpus,
            )
        )
        out.append(
            Node(
                name=f"n{i}",
                gpus=gpus,
                replicas=1 if contended else draw(st.sampled_from([1, 2, 3, 4, 8])),
                gpu_stats=tuple(stats),
                workload_classes=tuple(draw(st.lists(st.sampled_from(["inf", "nb"]), max_size=2))),
                last_reshape=draw(st.none() | st.just(NOW - 600)),
            )
        )
    return tuple(out)


@st.composite
def jobs(
    draw: st.DrawFn, slots: dict[str, int], fill: bool
) -> tuple[list[Job], list[Pod], dict[str, Forecast]]:
    """Jobs whose pods fit their nodes' slots (as a scheduler would place them); some suspended.

    With `fill`, one more job per node then takes what is left: pending jobs need room made.
    """
    left = dict(slots)
    job_list: list[Job] = []
    pods: list[Pod] = []
    forecasts: dict[str, Forecast] = {}
    count = draw(st.integers(0, 16))
    fillers = sorted(slots) if fill else []
    for i in range(count + len(fillers)):
        ns = draw(st.sampled_from(["a", "b", "c"]))
        key = f"{ns}/j{i}"
        queue = draw(st.sampled_from((*QUEUES * 4, "nowhere")))
        suspended = i < count and draw(st.sampled_from([False, False, False, False, True]))
        pod_on = st.tuples(st.sampled_from(sorted(slots)), st.sampled_from([2, 1, 4]))
        wanted = draw(st.lists(pod_on, min_size=1, max_size=3)) if i < count else []
        if i >= count:
            wanted = [(fillers[i - count], left[fillers[i - count]])]
        placed = []
        for node, want in [] if suspended else wanted:
            if min(want, left[node]) > 0:
                placed.append((node, min(want, left[node])))
                left[node] -= placed[-1][1]
        if not placed and not suspended:
            continue
        start = NOW - draw(st.sampled_from([20000.0, 30000.0, 4000.0, 20000.0, 900.0, 60.0]))
        gpus = sum(g for _, g in placed) or draw(st.integers(1, 8))
        job_list.append(
            Job(
                key=key, kind=JobKind.PYTORCH_JOB, namespace=ns, name=f"j{i}", queue=queue,
                gpus=gpus, min_member=max(1, len(placed)), priority=draw(st.integers(0, 3)),
                start_time=start, pods=tuple(f"{key}-{k}" for k in range(len(placed))),
                annotations=MappingProxyType(draw(st.sampled_from(ANNOTATIONS))),
                suspended=suspended, suspended_by_reclaimer=suspended and draw(st.booleans()),
            )
        )  # fmt: skip
        for k, (node, g) in enumerate(placed):
            pods.append(
                Pod(
                    key=f"{key}-{k}", namespace=ns, name=f"j{i}-{k}", node=node, gpus=g,
                    phase=PodPhase.RUNNING, job=key, start_time=start,
                )
            )  # fmt: skip
        if draw(st.sampled_from([True, True, True, False])):
            idle = draw(st.sampled_from([True, True, True, False]))
            confidence = draw(st.sampled_from([0.99, 0.92, 1.0, 0.95, 0.3, 0.6]))
            forecasts[key] = forecast(key, idle=idle, confidence=confidence)
    return job_list, pods, forecasts


@st.composite
def worlds(
    draw: st.DrawFn, contended: bool = False
) -> tuple[Snapshot, dict[str, Forecast], Policy]:
    """Any cluster; `contended` ones are full and have a starved queue, so preemption is due."""
    starved = contended or draw(st.booleans())  # a queue with nothing running and a big share
    qs = draw(queues()) + (
        (Queue("starved", deserved_gpus=1000.0, reclaimable=False),) if starved else ()
    )
    ns = draw(nodes(contended))
    job_list, pods, forecasts = draw(
        jobs({n.name: n.gpus * n.replicas for n in ns}, contended or draw(st.booleans()))
    )
    pending = [
        PendingDemand(
            queue="starved"
            if contended
            else draw(st.sampled_from(("starved",) * starved + QUEUES)),
            job=f"p/w{i}",
            gpus=draw(st.sampled_from([1, 2, 4, 8, 16] if contended else [2, 1, 4, 8, 12, 0])),
            min_member=draw(st.sampled_from([1, 2, 1, 3])),
            since=NOW - draw(st.integers(0, 3600)),
            priority=draw(st.integers(0, 3)),
        )
        for i in range(draw(st.integers(1 if contended else 0, 4)))
    ]
    keys = [j.key for j in job_list] + [n.name for n in ns]
    acted_on = st.dictionaries(st.sampled_from(keys), st.sampled_from([60.0, 7200.0]), max_size=2)
    acted = draw(acted_on) if keys else {}
    tight = draw(st.booleans())  # half the worlds have loose limits, so preemptions happen
    small = st.integers(0, 3) if tight else st.just(99)
    limits = Limits(
        max_preemptions_per_cycle=draw(small),
        max_preemptions_per_namespace=draw(small),
        max_pods_per_node=draw(small),
        max_gpus_freed_per_cycle=draw(st.sampled_from([0, 4, 8, 12]) if tight else small),
        max_resumes_per_cycle=draw(small),
        max_reshapes_per_cycle=draw(small),
    )
    snapshot = Snapshot(
        taken_at=NOW,
        queues=qs,
        jobs=tuple(job_list),
        pods=tuple(pods),
        nodes=ns,
        pending=tuple(pending),
        quality=DataQuality(metrics_at=NOW - 10),
        last_actions=MappingProxyType({k: NOW - ago for k, ago in acted.items()}),
    )
    return (
        snapshot,
        forecasts,
        Policy(
            limits=limits,
            min_confidence=draw(st.sampled_from([0.5, 0.9])),
            reclaim_busy_after_seconds=draw(st.sampled_from([None, 600.0, 1800.0])),
        ),
    )


ANY_WORLD = st.one_of(worlds(), worlds(contended=True))


def _shuffled(snapshot: Snapshot, seed: int) -> Snapshot:
    rng = random.Random(seed)

    def mix(items: tuple[object, ...]) -> tuple[object, ...]:
        out = list(items)
        rng.shuffle(out)
        return tuple(out)

    return replace(
        snapshot,
        queues=mix(snapshot.queues),  # type: ignore[arg-type]
        jobs=mix(snapshot.jobs),  # type: ignore[arg-type]
        pods=mix(snapshot.pods),  # type: ignore[arg-type]
        nodes=mix(snapshot.nodes),  # type: ignore[arg-type]
        pending=mix(snapshot.pending),  # type: ignore[arg-type]
    )


def _preempted(p: Plan, snapshot: Snapshot) -> list[Job]:
    by_key = {j.key: j for j in snapshot.jobs}
    return [by_key[a.target] for a in p.actions if a.kind is ActionKind.PREEMPT]


@settings(max_examples=120, deadline=None)
@given(ANY_WORLD, st.integers(0, 2**32 - 1))
def test_plan_is_deterministic_and_independent_of_input_order(
    world: tuple[Snapshot, dict[str, Forecast], Policy], seed: int
) -> None:
    snapshot, forecasts, policy = world
    first = plan(snapshot, forecasts, policy, NOW)
    assert plan(snapshot, dict(reversed(forecasts.items())), policy, NOW) == first
    assert plan(_shuffled(snapshot, seed), forecasts, policy, NOW) == first


@settings(max_examples=120, deadline=None)
@given(ANY_WORLD)
def test_preemptions_are_safe_and_within_limits(
    world: tuple[Snapshot, dict[str, Forecast], Policy],
) -> None:
    snapshot, forecasts, policy = world
    p = plan(snapshot, forecasts, policy, NOW)
    queues = {q.name: q for q in snapshot.queues}
    victims = _preempted(p, snapshot)
    lim = policy.limits
    for action in p.actions:
        if action.kind is ActionKind.PREEMPT:
            _assert_idle_or_waited_out(action, snapshot, forecasts[action.target], policy)
    for job in victims:
        q = queues.get(job.queue)
        assert q is not None and q.reclaimable, "never touch a non-reclaimable queue"
        assert not job.suspended
        assert not is_opted_out(job.annotations, policy)
        assert NOW - job.start_time >= min_runtime_seconds(job, policy)
        acted = snapshot.last_actions.get(job.key)
        assert acted is None or NOW - acted >= policy.job_cooldown_seconds
    assert len(victims) <= lim.max_preemptions_per_cycle
    freed = [a.evidence.gpus_freed for a in p.actions if a.kind is ActionKind.PREEMPT]
    assert sum(freed) <= lim.max_gpus_freed_per_cycle
    for ns in {j.namespace for j in victims}:
        assert sum(j.namespace == ns for j in victims) <= lim.max_preemptions_per_namespace
    victim_keys = {j.key for j in victims}
    per_node: dict[str, int] = {}
    for pod in snapshot.pods:
        if pod.job in victim_keys and pod.node is not None:
            per_node[pod.node] = per_node.get(pod.node, 0) + 1
    assert all(n <= lim.max_pods_per_node for n in per_node.values())
    targets = [a.target for a in p.actions]
    assert len(targets) == len(set(targets)), "one action per target"


@settings(max_examples=120, deadline=None)
@given(ANY_WORLD)
def test_every_candidate_is_acted_on_or_explained(
    world: tuple[Snapshot, dict[str, Forecast], Policy],
) -> None:
    snapshot, forecasts, policy = world
    p = plan(snapshot, forecasts, policy, NOW)
    seen = {a.target for a in p.actions} | {s.target for s in p.skipped}
    pending_served = {a.evidence.for_pending for a in p.actions}
    running = {pod.job for pod in snapshot.pods if pod.gpus > 0}
    for job in snapshot.jobs:
        if (not job.suspended and job.key in running) or job.suspended_by_reclaimer:
            assert job.key in seen, job.key
    for d in snapshot.pending:
        if d.gpus > 0:
            assert d.job in seen or d.job in pending_served, d.job
    for a in p.actions:
        if a.kind is ActionKind.RESUME:
            assert any(j.key == a.target and j.suspended_by_reclaimer for j in snapshot.jobs)
        if a.kind is ActionKind.RESHAPE:
            assert a.from_replicas != a.to_replicas
            assert a.to_replicas is not None
            assert 1 <= a.to_replicas <= policy.time_slicing.max_replicas
            if a.to_replicas == 1:  # below 2 only for pods that do not fit, or whole GPUs
                assert a.reason in BELOW_TWO, a
    assert len([a for a in p.actions if a.kind is ActionKind.RESUME]) <= (
        policy.limits.max_resumes_per_cycle
    )
    assert len([a for a in p.actions if a.kind is ActionKind.RESHAPE]) <= (
        policy.limits.max_reshapes_per_cycle
    )


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.filter_too_much])
@given(ANY_WORLD, st.sampled_from([None, NOW - 3600.0, NOW + 600.0]), st.booleans())
def test_no_action_on_stale_or_incomplete_data(
    world: tuple[Snapshot, dict[str, Forecast], Policy], metrics_at: float | None, complete: bool
) -> None:
    """Only worlds whose plan acts on fresh, complete data: there the gate has work to do.
    Missing, stale or future-dated (clock skew) metrics, or a partial snapshot, stop it all."""
    snapshot, forecasts, policy = world
    assume(plan(snapshot, forecasts, policy, NOW).actions)
    quality = DataQuality(metrics_at=metrics_at, complete=complete)
    assert plan(replace(snapshot, quality=quality), forecasts, policy, NOW).actions == ()
    fresh_but_partial = DataQuality(metrics_at=NOW, complete=False)
    assert plan(replace(snapshot, quality=fresh_but_partial), forecasts, policy, NOW).actions == ()


def _assert_idle_or_waited_out(
    action: Action, snapshot: Snapshot, f: Forecast, policy: Policy
) -> None:
    """An idle victim, or a busy one taken for a job that has waited `reclaimBusyAfter`."""
    if f.idle and f.confidence >= policy.min_confidence:
        assert action.reason is Reason.IDLE_FOR_STARVED_QUEUE
        return
    assert action.reason is Reason.BUSY_FOR_LONG_STARVED
    after = policy.reclaim_busy_after_seconds
    assert after is not None, "busy jobs are taken only when the policy allows it"
    since = {d.job: d.since for d in snapshot.pending}[action.evidence.for_pending or ""]
    assert NOW - since >= after, "a busy job is taken only for a job that has waited long"
