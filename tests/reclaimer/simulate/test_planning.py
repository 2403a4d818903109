"""The replay forecasts and plans with the controller's settings: one conversion from a policy."""

from __future__ import annotations

import pytest
from forecast.test_forecaster import NOW, fleet, frame

from reclaimer.forecast.forecaster import ForecastParams, forecast
from reclaimer.forecast.params import for_policy
from reclaimer.policy.settings import Policy
from reclaimer.simulate.planning import planner_for


def test_min_confidence_is_honoured_by_the_replay() -> None:
    """`simulate --policy-file` used to drop minConfidence: the operating point stayed 0.85."""
    history = frame(fleet())
    reference = forecast(history, ForecastParams(), NOW)
    job, f = next((k, v) for k, v in sorted(reference.items()) if 0.2 < v.confidence < 0.98)
    for point in (f.confidence - 0.01, f.confidence + 0.01):
        policy = Policy(min_confidence=round(point, 6))
        replayed = planner_for(policy).forecast(history, NOW)[job]
        assert replayed.idle is (f.confidence >= point), (point, f.confidence)
        assert replayed == forecast(history, for_policy(policy), NOW)[job]


@pytest.mark.parametrize(
    "policy",
    [Policy(), Policy(threshold=0.1, horizon_seconds=1800.0, min_confidence=0.9)],
    ids=["defaults", "set"],
)
def test_the_replay_and_the_controller_read_a_policy_alike(policy: Policy) -> None:
    params = for_policy(policy)
    replay = planner_for(policy)
    assert (replay.threshold, replay.horizon_seconds) == (params.threshold, params.horizon_seconds)
    assert params.min_confidence == policy.min_confidence
