"""The contention answers parsed (`prometheus.contention.contention`): counts of subquery
steps per pod become seconds; a partial answer gives no pods and says why. Input in, data out."""

from __future__ import annotations

import math

import pytest

from reclaimer.model import PodBusy
from reclaimer.prometheus.contention import (
    CONTENTION_STEP,
    CONTENTION_WINDOW,
    contention,
    contention_queries,
)
from reclaimer.prometheus.series import QueryResult, Series

AT = 1_700_000_000.0


def _answer(kind: str, counts: dict[str, float], warnings: tuple[str, ...] = ()) -> QueryResult:
    series = []
    for key, n in counts.items():
        ns, _, pod = key.partition("/")
        series.append(Series({"namespace": ns, "pod": pod}, ((AT, n),)))
    return QueryResult(contention_queries()[kind], "vector", tuple(series), warnings)


def _answers(
    present: dict[str, float],
    busy: dict[str, float],
    cobusy: dict[str, float],
    warnings: tuple[str, ...] = (),
) -> dict[str, QueryResult]:
    return {
        "present": _answer("present", present),
        "busy": _answer("busy", busy, warnings),
        "cobusy": _answer("cobusy", cobusy),
    }


@pytest.mark.parametrize(
    ("answers", "pods"),
    [
        pytest.param(
            _answers({"a/x": 1440, "a/y": 60}, {"a/x": 30, "a/y": 60}, {"a/x": 10, "a/y": 10}),
            {"a/x": PodBusy(86400.0, 1800.0, 600.0), "a/y": PodBusy(3600.0, 3600.0, 600.0)},
            id="steps-to-seconds",
        ),
        pytest.param(
            _answers({"a/idle": 120}, {}, {}),
            {"a/idle": PodBusy(7200.0, 0.0, 0.0)},
            id="never-busy-reads-zero",
        ),
        pytest.param(
            _answers({"a/alone": 90}, {"a/alone": 45}, {}),
            {"a/alone": PodBusy(5400.0, 2700.0, 0.0)},
            id="busy-alone-reads-no-cobusy",
        ),
        pytest.param(
            _answers({"a/x": math.nan, "a/": 5}, {"a/x": 3}, {}),
            {"a/x": PodBusy(0.0, 180.0, 0.0)},
            id="nan-and-unnamed-left-out",
        ),
    ],
)
def test_counts_of_steps_become_seconds(
    answers: dict[str, QueryResult], pods: dict[str, PodBusy]
) -> None:
    read = contention(answers)
    assert not read.error and read.window == CONTENTION_WINDOW == 86400.0
    assert dict(read.pods) == pods


def test_a_partial_answer_gives_no_pods_and_says_why() -> None:
    answers = _answers({"a/x": 60}, {"a/x": 60}, {"a/x": 60}, warnings=("store-2 down",))
    read = contention(answers)
    assert read.pods == {} and read.error == "partial answer: store-2 down"


def test_each_query_counts_one_day_of_minute_steps_per_pod() -> None:
    queries = contention_queries()
    assert set(queries) == {"present", "busy", "cobusy"} and CONTENTION_STEP == 60.0
    for q in queries.values():
        assert q.startswith("sum by (namespace, pod) (count_over_time(")
        assert q.endswith("[86400s:60s]))")
