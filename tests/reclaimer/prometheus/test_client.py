"""prom.py against a scripted fake Prometheus: errors typed, retries bounded, partial flagged."""

from __future__ import annotations

import math

import pytest
from fakeprom import NEVER_S, Reply, error, fake_prometheus, matrix, vector

from reclaimer.prometheus.client import PromClient, PromError, PromErrorKind, RetryPolicy

# Retries at once; a timeout only a hung fake reaches (the answers come at the machine's pace).
FAST = RetryPolicy(attempts=3, base_delay=0.01, max_delay=0.02, timeout=60.0)


async def no_sleep(_: float) -> None:
    return None


async def test_vector_parsed_with_labels_and_special_floats() -> None:
    body = vector(({"pod": "a"}, 0.5), ({"pod": "b"}, math.nan))
    async with fake_prometheus(Reply(body)) as fake, PromClient(fake.url, FAST) as prom:
        res = await prom.query("up", at=1000.0)
    assert [dict(s.labels) for s in res.series] == [{"pod": "a"}, {"pod": "b"}]
    assert res.series[0].points == ((1000.0, 0.5),)
    assert math.isnan(res.series[1].points[0][1])
    assert not res.partial
    path, form = fake.requests[0]
    assert path == "/api/v1/query" and form["query"] == "up" and form["time"] == "1000"


async def test_range_sends_step_aligned_form() -> None:
    body = matrix(({"pod": "a"}, [(60.0, 0.1), (120.0, 0.2)]))
    async with fake_prometheus(Reply(body)) as fake, PromClient(fake.url, FAST) as prom:
        res = await prom.query_range("x", 60.0, 120.0, 60.0)
    assert res.series[0].points == ((60.0, 0.1), (120.0, 0.2))
    assert fake.requests[0][1] | {"timeout": ""} == {
        "query": "x",
        "start": "60",
        "end": "120",
        "step": "60",
        "timeout": "",
    }


async def test_warnings_mark_result_partial() -> None:
    body = vector(({"pod": "a"}, 1.0), warnings=["remote read: store unavailable"])
    async with fake_prometheus(Reply(body)) as fake, PromClient(fake.url, FAST) as prom:
        res = await prom.query("x")
    assert res.partial and res.warnings == ("remote read: store unavailable",)


@pytest.mark.parametrize(
    ("replies", "kind", "requests"),
    [
        pytest.param(
            [Reply(error("bad_data", "parse error"), 400)],
            PromErrorKind.API,
            1,
            id="bad-query-not-retried",
        ),
        pytest.param(
            [Reply(error("execution", "too many samples"), 422)],
            PromErrorKind.API,
            1,
            id="execution-error-not-retried",
        ),
        pytest.param(
            [Reply(error("timeout", "query timed out"), 503)] * 3,
            PromErrorKind.API,
            3,
            id="server-timeout-retried-then-fails",
        ),
        pytest.param(
            [Reply("<html>bad gateway</html>", 502)] * 3,
            PromErrorKind.HTTP,
            3,
            id="proxy-502-retried-then-fails",
        ),
        pytest.param([Reply("not json", 200)], PromErrorKind.BAD_RESPONSE, 1, id="garbage-body"),
        pytest.param([Reply(matrix())], PromErrorKind.BAD_RESPONSE, 1, id="resulttype-mismatch"),
        pytest.param(
            [
                Reply(
                    {
                        "status": "success",
                        "data": {"resultType": "vector", "result": [{"metric": {}}]},
                    }
                )
            ],
            PromErrorKind.BAD_RESPONSE,
            1,
            id="malformed-sample",
        ),
    ],
)
async def test_errors_are_typed_and_retries_bounded(
    replies: list[Reply], kind: PromErrorKind, requests: int
) -> None:
    async with fake_prometheus(*replies) as fake:
        async with PromClient(fake.url, FAST, sleep=no_sleep) as prom:
            with pytest.raises(PromError) as err:
                await prom.query("x")
        assert err.value.kind is kind
        assert len(fake.requests) == requests == prom.requests


async def test_a_server_that_never_answers_times_out_each_try() -> None:
    quick = RetryPolicy(attempts=3, base_delay=0.01, max_delay=0.02, timeout=0.5)
    async with fake_prometheus(*[Reply(vector(), delay=NEVER_S)] * 3) as fake:
        async with PromClient(fake.url, quick, sleep=no_sleep) as prom:
            with pytest.raises(PromError) as err:
                await prom.query("x")
        assert err.value.kind is PromErrorKind.TIMEOUT
        assert len(fake.requests) == 3 == prom.requests


async def test_transient_failure_recovers_with_backoff() -> None:
    slept: list[float] = []

    async def sleep(s: float) -> None:
        slept.append(s)

    policy = RetryPolicy(attempts=4, base_delay=0.5, max_delay=1.5, timeout=60.0)
    replies = [Reply(error("unavailable", "x"), 503)] * 3 + [Reply(vector(({}, 1.0)))]
    async with fake_prometheus(*replies) as fake, PromClient(fake.url, policy, sleep) as prom:
        res = await prom.query("x")
    assert res.series[0].points[0][1] == 1.0
    assert slept == [0.5, 1.0, 1.5]  # doubled, capped at max_delay


async def test_unreachable_is_typed() -> None:
    async with fake_prometheus() as fake:
        url = fake.url
    async with PromClient(url, FAST, sleep=no_sleep) as prom:
        with pytest.raises(PromError) as err:
            await prom.query("x")
    assert err.value.kind is PromErrorKind.UNREACHABLE
    assert prom.requests == FAST.attempts
