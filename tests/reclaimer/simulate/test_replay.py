"""Replays of hand-made traces whose outcome per policy follows from the trace itself."""

from __future__ import annotations

import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from simworld import BURSTY, HOUR, IDLE, WORKING_4_OF_5, P, run

from reclaimer.policy.settings import Policy, load_policy
from reclaimer.simulate.jobs import Event, EventKind
from reclaimer.simulate.strategies import Strategy

ALL = list(Strategy)

# two idle best-effort jobs hold both GPUs when a latency-sensitive job arrives
STARVED = [
    P("be-1", "BE", 0.0, 20 * HOUR),
    P("be-2", "BE", 0.0, 20 * HOUR),
    P("ls-1", "LS", 3 * HOUR, 1 * HOUR),
    P("ls-late", "LS", 40 * HOUR, 1 * HOUR),  # keeps the replay going until all finish
]
WORK_GPU_HOURS = sum(p.runtime for p in STARVED) / HOUR


def _preemptions(events: list[Event]) -> list[Event]:
    return [e for e in events if e.kind is EventKind.PREEMPTED]


@pytest.mark.parametrize("policy", [Strategy.FORECAST, Strategy.ALLOCATION], ids=str)
def test_idle_best_effort_job_is_preempted_for_a_waiting_guaranteed_job(policy):
    result = run(STARVED, [1, 1], policy)
    baseline = run(STARVED, [1, 1], Strategy.NONE)

    assert result.preemptions == 1
    assert result.guaranteed_preemptions == 0
    assert result.wrongful_preemptions == 0  # the profile never gets busy
    assert result.wait_p95_s["ls"] < baseline.wait_p95_s["ls"]
    # the victim never worked: it loses nothing and redoes nothing
    assert result.lost_gpu_hours == 0
    assert result.gpu_hours_allocated == pytest.approx(WORK_GPU_HOURS, abs=0.01)


@pytest.mark.parametrize(
    ("profile", "work_share"),
    [(IDLE, 0.0), (BURSTY, None), (WORKING_4_OF_5, 0.8)],
    ids=["idle", "bursty", "busy-4-of-5-minutes"],
)
def test_a_victim_redoes_its_work_since_its_start_but_not_its_idle_time(profile, work_share):
    events: list[Event] = []
    result = run(STARVED, [1, 1], Strategy.ALLOCATION, profile, events=events)  # takes busy too
    (cut,) = _preemptions(events)
    ran = cut.progress  # the victim ran from its start (progress 0) until then
    resumed = [e for e in events if e.job == cut.job and e.at > cut.at]

    assert result.preemptions == 1
    assert cut.at % 300 == 0  # on the tick grid: whole 5-minute steps of its profile
    if work_share is not None:  # whole 5-minute steps: the share holds at any profile offset
        assert cut.lost_seconds == pytest.approx(work_share * ran)
    assert 0 <= cut.lost_seconds <= ran
    assert result.lost_gpu_hours == pytest.approx(cut.lost_seconds / HOUR, abs=0.01)
    # it goes on where it stood less the work it lost
    assert [e.kind for e in resumed] == [EventKind.RESUMED, EventKind.STARTED, EventKind.FINISHED]
    assert resumed[1].progress == pytest.approx(ran - cut.lost_seconds)
    # lost work is done again, idle time is not: allocated = the trace's run time + lost work
    assert result.gpu_hours_allocated == pytest.approx(
        WORK_GPU_HOURS + result.lost_gpu_hours, abs=0.01
    )


def test_nothing_is_preempted_without_a_policy():
    result = run(STARVED, [1, 1], Strategy.NONE)

    assert result.preemptions == 0
    assert result.lost_gpu_hours == 0
    assert result.gpu_hours_allocated == pytest.approx(WORK_GPU_HOURS, abs=0.01)
    assert result.wait_p50_s["ls"] == pytest.approx(17 * HOUR / 2, abs=1.0)  # 17 h and 0 h


def test_a_checkpoint_interval_limits_the_lost_work():
    every = HOUR
    plain = run(STARVED, [1, 1], Strategy.ALLOCATION, WORKING_4_OF_5)
    events: list[Event] = []
    saved = run(
        STARVED,
        [1, 1],
        Strategy.ALLOCATION,
        WORKING_4_OF_5,
        reclaim_policy=Policy(checkpoint_interval_seconds=every),
        events=events,
    )
    (cut,) = _preemptions(events)

    assert saved.preemptions == plain.preemptions == 1
    # only the work since the last checkpoint is lost
    assert cut.lost_seconds == pytest.approx(0.8 * (cut.progress % every))
    assert saved.lost_gpu_hours < plain.lost_gpu_hours


@pytest.mark.parametrize("policy", ALL, ids=str)
def test_guaranteed_jobs_are_never_preempted(policy):
    pods = [
        P("ls-idle", "LS", 0.0, 20 * HOUR),
        P("burst-idle", "Burstable", 0.0, 20 * HOUR),
        P("ls-waiting", "LS", 2 * HOUR, HOUR),
    ]
    result = run(pods, [1, 1], policy)

    assert result.preemptions == 0
    assert result.guaranteed_preemptions == 0
    assert result.wait_p95_s["ls"] > 0  # it really waited: someone could have been a victim


@pytest.mark.parametrize(
    ("profile", "all_wrongful"),
    [(BURSTY, True), (IDLE, False)],
    ids=["busy-again-within-horizon", "never-busy-again"],
)
def test_idle_culler_preemptions_are_wrongful_when_the_victim_gets_busy_again(
    profile, all_wrongful
):
    result = run([P("be-1", "BE", 0.0, 6 * HOUR)], [1], Strategy.THRESHOLD, profile)

    assert result.preemptions > 0  # it culls even though nobody waits
    expected = result.preemptions if all_wrongful else 0
    assert result.wrongful_preemptions == expected
    assert (result.lost_gpu_hours > 0) == all_wrongful  # a job that never works loses nothing


def test_the_forecast_policy_leaves_jobs_alone_when_nobody_waits():
    result = run([P("be-1", "BE", 0.0, 6 * HOUR)], [1], Strategy.FORECAST, BURSTY)

    assert result.preemptions == 0


def test_same_seed_same_result_and_the_seed_picks_profiles():
    pods = [P(f"be-{i}", "BE", i * 600.0, 8 * HOUR) for i in range(6)]
    pods += [P(f"ls-{i}", "LS", 4 * HOUR + i * 900.0, HOUR) for i in range(4)]

    # two profiles to pick from: one bursty, one never busy (where each starts is the arrival's
    # time of day, whatever the seed)
    two = pd.concat([BURSTY, IDLE.assign(container_ip="pod-b")], ignore_index=True)

    first = run(pods, [2, 2], Strategy.FORECAST, IDLE, seed=7)
    again = run(pods, [2, 2], Strategy.FORECAST, IDLE, seed=7)
    busy = {seed: run(pods, [2, 2], Strategy.NONE, two, seed=seed) for seed in range(4)}

    assert first == again
    assert first.preemptions > 0  # the forecast path really ran
    assert len({r.gpu_hours_busy for r in busy.values()}) > 1


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    policy=st.sampled_from([Strategy.NONE, Strategy.ALLOCATION, Strategy.THRESHOLD]),
    shapes=st.lists(
        st.tuples(
            st.sampled_from(["BE", "LS", "Burstable"]),
            st.integers(0, 20),  # arrival, in 10-minute steps
            st.integers(1, 30),  # runtime, in 10-minute steps
            st.sampled_from([(1, 1000), (2, 1000), (1, 300), (1, 600)]),
        ),
        min_size=1,
        max_size=10,
    ),
)
def test_replay_invariants(policy, shapes):
    pods = [
        P(f"pod-{i}", qos, a * 600.0, r * 600.0, num, milli)
        for i, (qos, a, r, (num, milli)) in enumerate(shapes)
    ]
    result = run(pods, [2, 1], policy, BURSTY)

    assert result.guaranteed_preemptions == 0
    assert 0 <= result.gpu_hours_busy <= result.gpu_hours_allocated <= result.gpu_hours_capacity
    assert 0 <= result.wrongful_preemptions <= result.preemptions
    assert set(result.wait_p95_s) <= {"be", "ls", "burstable"}


def _kinds(events: list[Event], job: int) -> list[EventKind]:
    return [e.kind for e in events if e.job == job]


def test_a_planner_victim_stays_suspended_until_the_controller_resumes_it():
    events: list[Event] = []
    result = run(STARVED, [1, 1], Strategy.FORECAST, events=events)
    (cut,) = _preemptions(events)
    ls_done = next(e.at for e in events if e.kind is EventKind.FINISHED and e.job == 2)
    resumed = next(e for e in events if e.kind is EventKind.RESUMED)

    assert cut.suspended
    assert _kinds(events, cut.job) == [
        EventKind.QUEUED,
        EventKind.STARTED,
        EventKind.PREEMPTED,
        EventKind.RESUMED,
        EventKind.STARTED,
        EventKind.FINISHED,
    ]
    # not while the LS job holds its GPU, nor within the job cool-down after its preemption
    assert resumed.job == cut.job
    assert resumed.at >= max(ls_done, cut.at + Policy().job_cooldown_seconds)
    # its time suspended is waiting: be-1 waited it all, be-2 not at all (p50 of the two)
    started_again = [e for e in events if e.job == cut.job][-2]
    assert result.wait_p50_s["be"] == pytest.approx((started_again.at - cut.at) / 2, abs=0.1)


def test_without_resumes_a_victim_waits_to_the_end_of_the_replay():
    events: list[Event] = []
    policy = load_policy("actions: {resume: false}")
    run(STARVED, [1, 1], Strategy.FORECAST, reclaim_policy=policy, events=events)
    (cut,) = _preemptions(events)

    assert _kinds(events, cut.job)[-1] is EventKind.PREEMPTED


def test_the_idle_culler_requeues_its_victims_at_once():
    events: list[Event] = []
    run([P("be-1", "BE", 0.0, 6 * HOUR)], [1], Strategy.THRESHOLD, IDLE, events=events)
    cut = _preemptions(events)[0]
    after = [e for e in events if e.job == cut.job and e.at >= cut.at][1:3]

    assert not cut.suspended
    assert [(e.kind, e.at) for e in after] == [
        (EventKind.QUEUED, cut.at),
        (EventKind.STARTED, cut.at),
    ]
