"""`simulate --forecaster NAME`: the replay's planner acts on the named method's answers."""

from __future__ import annotations

import json

import pytest
from simworld import BURSTY, HOUR, P, simulate_argv, write_trace

from reclaimer.cli import main
from reclaimer.forecast.forecaster import DEFAULT_METHOD, METHODS
from reclaimer.policy.settings import Policy
from reclaimer.simulate.planning import planner_for

# Two reclaimable jobs fill both GPUs; a guaranteed one arrives at 3 h and can only get a GPU by
# a preemption (no time-sliced pool: reclaim only). Every job replays BURSTY: idle 40 minutes,
# then busy 10, over and over.
TRACE = [
    P("be-1", "BE", 0.0, 20 * HOUR),
    P("be-2", "BE", 0.0, 20 * HOUR),
    P("ls-1", "LS", 3 * HOUR, HOUR),
]


def _replay(tmp_path, capsys, *extra: str) -> dict[str, object]:
    paths = write_trace(tmp_path, TRACE, [1, 1], BURSTY)
    argv = simulate_argv(
        paths, "--capacity-scale", "1", "--strategy", "forecast", "--json", "--pool-share", "0"
    )
    code = main([*argv, *extra])
    assert code == 0
    result: dict[str, object] = json.loads(capsys.readouterr().out)
    return result


def test_every_method_forecast_eval_scores_is_a_choice():
    assert DEFAULT_METHOD in METHODS
    assert {"decayed-p95", "last-value", "burst-rate", "below-10m"} <= set(METHODS)


@pytest.mark.parametrize("method", ["decayed-p95", "last-value"])
def test_the_planner_forecasts_with_the_named_method(method):
    history = BURSTY.rename(columns={"container_ip": "job", "timestamp_anon": "timestamp"})
    history = history.assign(value=history["value"] / 100.0)
    now = float(history["timestamp"].iloc[-1])

    forecasts = planner_for(Policy(), forecaster=method).forecast(history, now)

    assert forecasts["pod-a"].method == method


def test_a_baseline_that_trusts_the_newest_sample_stops_a_job_about_to_burst(tmp_path, capsys):
    default = _replay(tmp_path, capsys)
    newest = _replay(tmp_path, capsys, "--forecaster", "last-value")
    p95 = _replay(tmp_path, capsys, "--forecaster", "decayed-p95")

    # last-value calls a job idle on one idle sample, so it stops one inside its 40 idle
    # minutes whatever comes next: that stop is wrongful (busy again within the horizon)
    assert (newest["preemptions"], newest["wrongful_preemptions"]) == (1, 1)
    # the default learns the 50-minute cycle and stops one only where it stays idle
    assert (default["preemptions"], default["wrongful_preemptions"]) == (1, 0)
    # a 20% busy share puts the decayed 95th percentile above the threshold: never idle
    assert p95["preemptions"] == 0


def test_an_unknown_forecaster_exits_2(tmp_path, capsys):
    paths = write_trace(tmp_path, TRACE, [1, 1], BURSTY)
    with pytest.raises(SystemExit) as exit_info:
        main([*simulate_argv(paths, "--strategy", "forecast"), "--forecaster", "oracle"])
    assert exit_info.value.code == 2
    assert "oracle" in capsys.readouterr().err
