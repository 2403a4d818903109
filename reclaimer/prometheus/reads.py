"""One cycle's read of Prometheus: answers of bounded size, each folded in before the next.

Requests per read: the recording-rule probe (only when the caller has no answer yet; the
controller probes at start, then hourly until the rules cover the window), one freshness query
(`max(timestamp(...))`, the newest raw sample, looking `lookahead` past now for samples from the
future), the history's `query_range`s, and three instant
queries for node GPU stats, three for the per (pod, device) readings of `sharing` (our
exporter's source only), and the hourly node load `query_range` and pods' memory peaks (our
exporter's source only), and the pods' contention (`contention_read`: three instant queries,
our exporter's source only) when the hour has turned since the caller's last `LoadRead` (a failed
one refuses raises, never the cycle). The history is
fetched per (pod shard x time chunk): shards of at most `pods_per_request` of the view's GPU pods
(`fold.pod_shards`, named by a pod-name regex), time chunks of the window to fetch (the first
read's whole window, then only the new tail) short
enough that one answer holds at most `points_per_request` points (and at most 10,000 steps). At
most `requests_in_flight` answers are in flight; each is folded into the per-pod float32
`History` and dropped as it lands, so a read never holds a whole fleet's JSON: memory stays flat
in the fleet size, the request count grows with it (a steady-state read: one request per 256
pods, for the few new steps). A history request Prometheus refuses as too many samples (HTTP
422, over its `--query.max-samples`) is split in two (its pods, else its time range) and sent
again, and the read's later requests larger than half the refused one are split before they go,
so a large fleet reads (and plans) again; one log line says so (after `MAX_REFUSALS` refusals
the read gives up). A failed
utilization or freshness query raises `MetricsUnavailable` (nothing to plan on); a failed stats
query or Prometheus warnings clear `complete`; jobs missing series (left out of the history, so
never forecast idle, listed in `unknown` with why) are reported in `problems`; whether the data
is too old (or dated after `now`: the clocks disagree) is the planner's `data_gate` to say, from
`metrics_at`.
"""

from __future__ import annotations

import asyncio
import logging
import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import partial

import pandas as pd

from reclaimer.forecast.history import History
from reclaimer.model import ClusterView, Contention, GpuStats, LoadHistory, MemoryPeaks, PodGpuUsage
from reclaimer.prometheus.client import PromClient, PromError
from reclaimer.prometheus.contention import DCGM_UNREAD
from reclaimer.prometheus.contention_read import read_contention
from reclaimer.prometheus.coverage import Recent
from reclaimer.prometheus.fold import (
    fold,
    jobs_of,
    pod_frame_of,
    pod_history_of,
    pod_matrix,
    pod_rows,
    pod_selector,
    pod_shards,
)
from reclaimer.prometheus.history import (
    HistoryParams,
    MetricsSource,
    align,
    fetch_start,
    freshness_query,
    node_stats,
    node_stats_queries,
    pod_utilization_query,
    recorded_probe_query,
    time_chunks,
    unknown_problems,
)
from reclaimer.prometheus.series import QueryResult
from reclaimer.prometheus.sharing import (
    LOAD_STEP,
    PEAK_WINDOW,
    load_histories,
    load_query,
    load_range,
    memory_peaks,
    peaks_query,
    pod_gpu_queries,
    pod_gpus,
)

log = logging.getLogger(__name__)


class MetricsUnavailable(Exception):
    """Prometheus could not give the utilization history this cycle needs."""


@dataclass(frozen=True)
class LoadRead:
    """One hourly read of node load histories (`sharing.load_query`) and, from our exporter's
    per-pod series, the pods' memory peaks and contention, and when it was read up to; a failed
    load read holds no node and says why (raises are then refused `NoLoadHistory`; the per-pod
    reads beside it are kept), a failed peaks read says why in
    `peaks.error` (raises are then refused `NoMemoryHeadroom`), a failed contention read in
    `contention.error` (the contention rule then knows nothing of contention)."""

    last: float  # last hourly evaluation time
    nodes: Mapping[str, LoadHistory]
    error: str = ""
    peaks: MemoryPeaks | None = None  # the pods' memory peaks (`sharing.peaks_query`), same hour
    contention: Contention | None = None  # pods' busy and co-busy time (`contention`), same hour

    @property
    def fresh(self) -> bool:
        """Read without error: kept until the hour turns (a failed read is tried again)."""
        failed = [r for r in (self.peaks, self.contention) if r is not None and r.error]
        return not self.error and all(r is DCGM_UNREAD for r in failed)


@dataclass(frozen=True)
class MetricsRead:
    jobs: History  # per job (known usage only): the forecaster's input
    pod_history: History  # per pod ("namespace/pod"), `fold` cells: kept for the next read
    node_stats: dict[str, tuple[GpuStats, ...]]
    metrics_at: float | None
    complete: bool
    problems: tuple[str, ...]
    recorded: bool  # the recording rules were used
    requests: int  # HTTP requests this read sent, retries included
    unknown: Mapping[str, str] = field(default_factory=dict)  # job -> why its usage is unknown
    pod_gpus: tuple[PodGpuUsage, ...] = ()  # who shares which device, how busy (`sharing`)
    load: LoadRead | None = None  # node load histories (kept by the caller, re-read hourly)

    @property
    def history(self) -> pd.DataFrame:
        """`jobs` as a long frame (job, timestamp, value), built on demand (exports, tests)."""
        return self.jobs.to_frame()

    @property
    def pods(self) -> pd.DataFrame:
        """`pod_history` as a long frame (namespace, pod, timestamp, value; NaN: unreadable)."""
        return pod_frame_of(self.pod_history)


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
    previous: History | pd.DataFrame | None = None,
    load: LoadRead | None = None,
) -> MetricsRead:
    """Read history and node stats for `view` as of `now`; see the module docstring.

    `previous` is the last read's `pod_history` (or its `pods` frame): only the steps it lacks
    are fetched. `load` is the last read's node load: read again once the hour has turned.
    """
    if isinstance(previous, pd.DataFrame):
        previous = pod_history_of(previous)
    before = client.requests
    if recorded is None:
        recorded = source is MetricsSource.GPU_RECLAIM and await probe_recorded(client, now, params)
    start = fetch_start(previous, now, params)
    window_start, end = align(now - params.window, params.step), align(now, params.step)
    stats_q = node_stats_queries(params.stats_window)
    share_q = pod_gpu_queries(params.stats_window) if source is MetricsSource.GPU_RECLAIM else {}
    side = [client.query(freshness_query(source, params.lookahead), at=now + params.lookahead)]
    side += [client.query(q, at=now) for q in [*stats_q.values(), *share_q.values()]]
    side_task = asyncio.gather(*side, return_exceptions=True)
    load_task = asyncio.ensure_future(_read_load(client, now, load, source))
    pods = pod_matrix(
        pod_rows(view), window_start, end, params.step, previous=previous, fetched_from=start
    )
    try:
        query_for = partial(pod_utilization_query, source, recorded, params.step)
        spans = _spans(pods.keys, previous, (window_start, start, end))
        ranges = await _fetch_history(client, pods, query_for, spans, params)
    finally:
        answers = await side_task
        load_read = await load_task
    fresh = _required(answers[:1])[0]
    problems = _warnings([fresh]) + ranges
    n = len(stats_q)
    stats, stats_problems = _node_stats(dict(zip(stats_q, answers[1 : 1 + n], strict=True)))
    problems += stats_problems
    shares, share_problems = _pod_gpus(dict(zip(share_q, answers[1 + n :], strict=True)))
    problems += share_problems
    complete = not problems  # failed or partial queries; what follows is reported, not fatal
    metrics_at = _newest(fresh)  # stale or missing: `plan.data_gate` decides and says so
    recent = Recent(start=now - params.horizon, step=params.step, fresh_since=now - params.max_age)
    jobs, unknown = jobs_of(pods, view, recent)
    return MetricsRead(
        jobs=jobs,
        pod_history=pods,
        node_stats=stats,
        metrics_at=metrics_at,
        complete=complete,
        problems=(*problems, *unknown_problems(unknown)),
        recorded=recorded,
        requests=client.requests - before,
        unknown=unknown,
        pod_gpus=shares,
        load=load_read,
    )


async def _read_load(
    client: PromClient, now: float, previous: LoadRead | None, source: MetricsSource
) -> LoadRead:
    """Node load histories, pods' memory peaks and contention, re-read only when the hour has
    turned since `previous` (or it failed). Under dcgm-exporter's source there are no per-pod
    series: no peaks (raises are then refused) and contention `DCGM_UNREAD` (unknown)."""
    first, last = load_range(now)
    if previous is not None and previous.last == last and previous.fresh:
        return previous
    per_pod = (
        asyncio.gather(_read_peaks(client, now), read_contention(client, now))
        if source is MetricsSource.GPU_RECLAIM
        else None
    )
    result, error = None, ""
    try:
        result = await client.query_range(load_query(), first, last, LOAD_STEP)
    except PromError as err:
        error = f"node load history unavailable: {err}"
    peaks, contention = (None, DCGM_UNREAD) if per_pod is None else await per_pod
    if result is None:  # the per-pod reads stand alone (memory and contention rules lower by them)
        return LoadRead(last, {}, error, peaks=peaks, contention=contention)
    nodes = load_histories(result, first, last)
    return LoadRead(last, nodes, peaks=peaks, contention=contention)


async def _read_peaks(client: PromClient, at: float) -> MemoryPeaks:
    try:
        return memory_peaks(await client.query(peaks_query(), at=at))
    except PromError as err:
        return MemoryPeaks(PEAK_WINDOW, error=f"query failed: {err}")


def _pod_gpus(
    answers: Mapping[str, QueryResult | BaseException],
) -> tuple[tuple[PodGpuUsage, ...], list[str]]:
    """Per (pod, device) readings, or none and a problem when any of their queries failed."""
    if not answers:
        return (), []
    errs = [str(a) for a in answers.values() if isinstance(a, BaseException)]
    if errs:
        return (), [f"per-pod device readings unavailable: {'; '.join(errs)}"]
    results = {k: _ok(a) for k, a in answers.items()}
    return pod_gpus(results), _warnings(results.values())


Span = tuple[Sequence[str], float, float]  # rows, first and last grid time to fetch


def _spans(
    keys: Sequence[str], previous: History | None, times: tuple[float, float, float]
) -> list[Span]:
    """What to fetch, from `times` = (window start, tail start, end): the rows the previous
    read held need only the tail; rows new to this read (a pod just started) the whole window."""
    window_start, start, end = times
    held = set(previous.keys) if previous is not None and start > window_start else set()
    tail = [k for k in keys if k in held]
    whole = [k for k in keys if k not in held]
    return [(rows, first, end) for rows, first in ((whole, window_start), (tail, start)) if rows]


Request = tuple[Sequence[str], float, float]  # pods, first and last grid time


@dataclass
class _Fit:
    """What Prometheus refused this read as too many samples: requests larger than `points`
    (pods x steps) are split before they are sent."""

    points: float = math.inf
    refused: int = 0


async def _fetch_history(
    client: PromClient,
    pods: History,
    query_for: Callable[[str], str],
    spans: Sequence[Span],
    params: HistoryParams,
) -> list[str]:
    """Fetch each span's rows over its times in (pod shard x time chunk)
    requests, at most `requests_in_flight` at once, folding each answer in as it lands;
    returns the warnings. A request refused as too many samples (422) is split in two (its
    pods, else its time range) and retried, at most `MAX_REFUSALS` times a read."""
    requests: list[Request] = []
    for keys, first, end in spans:
        size = max(1, min(params.pods_per_request, len(keys)))
        steps = max(1, min(params.max_points, params.points_per_request // size))
        chunks = time_chunks(first, end, params.step, steps)
        requests += [(shard, s, e) for shard in pod_shards(keys, size) for s, e in chunks]
    rows = {k: i for i, k in enumerate(pods.keys)}
    gate = asyncio.Semaphore(max(1, params.requests_in_flight))
    warnings: list[str] = []
    fit = _Fit()

    async def one(req: Request) -> None:
        halves = _halves(req, params.step)
        if halves and _points(req, params.step) > fit.points:
            for half in halves:  # one after the other: memory stays that of one answer
                await one(half)
            return
        shard, s, e = req
        async with gate:
            try:
                result = await client.query_range(query_for(pod_selector(shard)), s, e, params.step)
            except PromError as err:
                if not (err.too_many_samples and halves and fit.refused < MAX_REFUSALS):
                    raise MetricsUnavailable(f"utilization history unavailable: {err}") from err
                result = None
        if result is None:
            assert halves is not None  # refused and splittable, else raised above
            fit.refused += 1
            fit.points = min(fit.points, _points(req, params.step) / 2)
            for half in halves:
                await one(half)
            return
        fold(pods, rows, result)
        warnings.extend(_warnings([result]))

    await asyncio.gather(*(one(req) for req in requests))
    if fit.refused:
        log.warning(
            "prometheus refused %d history request(s) as too many samples (its"
            " --query.max-samples): read in requests of at most %d pods x steps instead",
            fit.refused,
            fit.points,
        )
    return warnings


MAX_REFUSALS = 64  # 422s a read splits on before it gives up (a limit too low for one pod)


def _points(req: Request, step: float) -> int:
    shard, s, e = req
    return len(shard) * (round((e - s) / step) + 1)


def _halves(req: Request, step: float) -> tuple[Request, Request] | None:
    """`req` in two: its pods, or with one pod its time range; None for one pod, one step."""
    shard, s, e = req
    if len(shard) > 1:
        mid = len(shard) // 2
        return (shard[:mid], s, e), (shard[mid:], s, e)
    steps = round((e - s) / step) + 1
    if steps < 2:
        return None
    cut = s + (steps // 2 - 1) * step
    return (shard, s, cut), (shard, cut + step, e)


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
