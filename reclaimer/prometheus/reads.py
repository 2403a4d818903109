"""One cycle's read of Prometheus: a fixed handful of requests, whatever the fleet size.

Requests per read: the recording-rule probe (only when the caller has no answer yet; the
controller probes at start, then hourly until the rules cover the window), one freshness query
(`max(timestamp(...))`, the newest raw sample), one `query_range` per time chunk of the history
to fetch (one chunk up to 10,000 steps: the first read's whole window, then only the new tail),
and three instant queries for node GPU stats; all but the probe run concurrently. A failed
utilization or freshness query raises `MetricsUnavailable` (nothing to plan on); a failed stats
query or Prometheus warnings clear `complete`; jobs missing series (left out of the history, so
never forecast idle, listed in `unknown` with why) are reported in `problems`; whether the data
is too old is the planner's `data_gate` to say, from `metrics_at`.
"""

from __future__ import annotations

import asyncio
import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

import pandas as pd

from reclaimer.model import ClusterView, GpuStats
from reclaimer.prometheus.client import PromClient, PromError
from reclaimer.prometheus.coverage import Recent
from reclaimer.prometheus.history import (
    HistoryParams,
    MetricsSource,
    align,
    fetch_start,
    freshness_query,
    job_frame,
    merge_pods,
    node_stats,
    node_stats_queries,
    pod_frame,
    pod_utilization_query,
    recorded_probe_query,
    time_chunks,
)
from reclaimer.prometheus.series import QueryResult


class MetricsUnavailable(Exception):
    """Prometheus could not give the utilization history this cycle needs."""


@dataclass(frozen=True)
class MetricsRead:
    history: pd.DataFrame  # job, timestamp, value: the forecaster's input
    pods: pd.DataFrame  # namespace, pod, timestamp, value: per-pod, for the fleet summary
    node_stats: dict[str, tuple[GpuStats, ...]]
    metrics_at: float | None
    complete: bool
    problems: tuple[str, ...]
    recorded: bool  # the recording rules were used
    requests: int  # HTTP requests this read sent, retries included
    unknown: Mapping[str, str] = field(default_factory=dict)  # job -> why its usage is unknown


async def probe_recorded(client: PromClient, now: float, params: HistoryParams) -> bool:
    """True when the pod recording rules have data now and `recorded_coverage` ago."""
    try:
        result = await client.query(recorded_probe_query(params.recorded_coverage), at=now)
    except PromError as err:
        raise MetricsUnavailable(f"recording-rule probe failed: {err}") from err
    return any(s.points for s in result.series)


async def read_metrics(
    client: PromClient,
    view: ClusterView,
    now: float,
    params: HistoryParams,
    source: MetricsSource,
    *,
    recorded: bool | None = None,
    previous: pd.DataFrame | None = None,
) -> MetricsRead:
    """Read history and node stats for `view` as of `now`; see the module docstring.

    `previous` is the last read's `pods` frame: only the steps it lacks are fetched.
    """
    before = client.requests
    if recorded is None:
        recorded = source is MetricsSource.GPU_RECLAIM and await probe_recorded(client, now, params)
    start = fetch_start(previous, now, params)
    util_q = pod_utilization_query(source, recorded, params.step)
    chunks = time_chunks(start, align(now, params.step), params.step, params.max_points)
    stats_q = node_stats_queries(params.stats_window)
    calls = [client.query(freshness_query(source), at=now)]
    calls += [client.query_range(util_q, s, e, params.step) for s, e in chunks]
    calls += [client.query(q, at=now) for q in stats_q.values()]
    answers = await asyncio.gather(*calls, return_exceptions=True)
    fresh, *ranges = _required(answers[: 1 + len(chunks)])
    problems = _warnings([fresh, *ranges])
    stats, stats_problems = _node_stats(dict(zip(stats_q, answers[1 + len(chunks) :], strict=True)))
    problems += stats_problems
    complete = not problems  # failed or partial queries; what follows is reported, not fatal
    metrics_at = _newest(fresh)  # stale or missing: `plan.data_gate` decides and says so
    pods = merge_pods(previous, pod_frame(ranges), start, align(now - params.window, params.step))
    recent = Recent(start=now - params.horizon, step=params.step, fresh_since=now - params.max_age)
    jobs = job_frame(pods, view, recent)
    return MetricsRead(
        history=jobs.frame,
        pods=pods,
        node_stats=stats,
        metrics_at=metrics_at,
        complete=complete,
        problems=(*problems, *jobs.problems),
        recorded=recorded,
        requests=client.requests - before,
        unknown=jobs.unknown,
    )


def _required(answers: Sequence[QueryResult | BaseException]) -> list[QueryResult]:
    """The freshness and history answers: any failure makes the whole read unavailable."""
    for a in answers:
        if isinstance(a, PromError):
            raise MetricsUnavailable(f"utilization history unavailable: {a}") from a
        if isinstance(a, BaseException):
            raise a
    return [_ok(a) for a in answers]


def _node_stats(
    answers: Mapping[str, QueryResult | BaseException],
) -> tuple[dict[str, tuple[GpuStats, ...]], list[str]]:
    """Node stats, or none and a problem when any of their queries failed."""
    errs = [str(a) for a in answers.values() if isinstance(a, BaseException)]
    if errs:
        return {}, [f"node GPU stats unavailable: {'; '.join(errs)}"]
    results = {k: _ok(a) for k, a in answers.items()}
    return node_stats(results), _warnings(results.values())


def _warnings(results: Iterable[QueryResult]) -> list[str]:
    return [f"prometheus warning on {r.query!r}: {w}" for r in results for w in r.warnings]


def _ok(answer: QueryResult | BaseException) -> QueryResult:
    assert isinstance(answer, QueryResult)
    return answer


def _newest(result: QueryResult) -> float | None:
    values = [v for s in result.series for _, v in s.points if not math.isnan(v)]
    return max(values) if values else None
