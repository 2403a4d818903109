"""A history that goes on live: which series go on, and a real Prometheus continuing them."""

from __future__ import annotations

import json
import time
import urllib.parse
import urllib.request
from pathlib import Path

import pytest
from livehistory import last_values
from promserver import openmetrics, start_prometheus

T = 1_000_000.0


def test_series_reaching_the_newest_step_go_on_at_their_last_value() -> None:
    text = openmetrics(
        [
            ("util", {"pod": "busy"}, [(T - 120, 0.7), (T - 60, 0.8)]),
            ("util", {"pod": "gap"}, [(T - 600, 0.5), (T - 540, 0.5)]),  # stopped on purpose
            ("alloc", {"pod": "busy"}, [(T - 45, 1.0), (T - 15, 1.0)]),
        ]
    )
    assert last_values(text) == 'util{pod="busy"} 0.8\nalloc{pod="busy"} 1.0\n'


def _query(url: str, promql: str) -> list[dict[str, object]]:
    q = urllib.parse.urlencode({"query": promql})
    with urllib.request.urlopen(f"{url}/api/v1/query?{q}", timeout=60) as r:
        return list(json.loads(r.read())["data"]["result"])


@pytest.mark.prometheus
def test_prometheus_continues_the_backfilled_series(tmp_path: Path) -> None:
    """Scraped from the last values, the series goes on under its own labels (no job or
    instance): one series, whose newest sample is younger than the backfilled history's end,
    there as soon as the Prometheus is handed over (target discovery lags behind readiness)."""
    end = time.time() - 600  # ten minutes ago: past Prometheus' 5-minute lookback
    samples = [(end - 3600 + 60 * k, 0.25) for k in range(61)]
    text = openmetrics([("util", {"pod": "a"}, samples)])
    with start_prometheus(tmp_path, history=text, carry_on=True) as prom:
        got = _query(prom.url, "timestamp(util)")
        assert [r["metric"] for r in got] == [{"pod": "a"}]
        assert float(got[0]["value"][1]) > end  # type: ignore[index]
        (span,) = _query(prom.url, "count_over_time(util[2h])")
        assert int(span["value"][1]) > len(samples)  # type: ignore[index]
