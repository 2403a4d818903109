"""Read a past window of per-pod GPU history from Prometheus, in chunks (`export-history`).

A cycle's read (`prometheus.reads`) wants the last day, now; this reads any [start, end] whole,
with the same per-pod query (`history.pod_utilization_query`: the exporter's series, the
recording rules when they cover the window, or dcgm-exporter's), cut on the same step grid
(`history.time_chunks`, `CHUNK_POINTS` points a request). Chunks are fetched one after another
and each is turned into a per-pod frame (`history.pod_frame`) as it arrives, so only one chunk's
answer is held at a time. Requests: the recording-rule probe (gpu-reclaim source only), three
instant queries over the whole window (`prometheus.window`: placements, node GPUs, queues), the
arrivals' four (`prometheus.arrivals`: one when kube-state-metrics is not there), one
`query_range` per chunk. Any failure raises `WindowUnavailable`; warnings go to `problems`.
"""

from __future__ import annotations

from collections.abc import Callable

import pandas as pd

from reclaimer.prometheus import arrivals as arrived
from reclaimer.prometheus.client import PromClient, PromError
from reclaimer.prometheus.history import (
    HistoryParams,
    MetricsSource,
    align,
    pod_frame,
    pod_utilization_query,
    time_chunks,
)
from reclaimer.prometheus.reads import MetricsUnavailable, probe_recorded
from reclaimer.prometheus.window import (
    WindowRead,
    node_gpus_query,
    placement_query,
    placements,
    queue_query,
)

CHUNK_POINTS = 1440  # points per series per request: a day at one a minute


class WindowUnavailable(Exception):
    """Prometheus could not give the window's history; the message says why."""


async def read_window(
    client: PromClient,
    start: float,
    end: float,
    source: MetricsSource,
    *,
    step: float = 60.0,
    on_chunk: Callable[[int, int], None] | None = None,
) -> WindowRead:
    """Per-pod history over [start, end] on the `step` grid; `on_chunk(done, total)` after each
    chunk. Raises `WindowUnavailable`."""
    before = client.requests
    window = end - start
    params = HistoryParams(window=window, step=step, max_points=CHUNK_POINTS)
    try:
        recorded = source is MetricsSource.GPU_RECLAIM and await probe_recorded(client, end, params)
        placed, nodes, queues = [
            await client.query(q, at=end)
            for q in (placement_query(source, window), node_gpus_query(window), queue_query(window))
        ]
        came, ksm_warnings = await _arrivals(client, start, end, step)
        query = pod_utilization_query(source, recorded, step)
        chunks = time_chunks(align(start, step), align(end, step), step, params.max_points)
        frames, problems = await _chunks(client, query, chunks, step, on_chunk)
    except (PromError, MetricsUnavailable) as err:
        raise WindowUnavailable(str(err)) from err
    warned = [*placed.warnings, *nodes.warnings, *queues.warnings, *ksm_warnings]
    problems += [f"prometheus warning: {w}" for w in warned]
    if not came.found:
        problems.append(arrived.NO_KUBE_STATE)
    return WindowRead(
        pods=pd.concat(frames, ignore_index=True),
        placements=placements(placed),
        node_gpus={s.labels.get("Hostname", ""): int(s.points[-1][1]) for s in nodes.series},
        queues={
            (s.labels.get("namespace", ""), s.labels["pod"]): s.labels["queue"]
            for s in queues.series
            if "pod" in s.labels and "queue" in s.labels
        },
        arrivals=came,
        recorded=recorded,
        requests=client.requests - before,
        problems=tuple(problems),
    )


async def _arrivals(
    client: PromClient, start: float, end: float, step: float
) -> tuple[arrived.Arrivals, list[str]]:
    """Creations, then the pending GPU demand only when kube-state-metrics is there; and the
    answers' warnings."""
    created = await client.query(arrived.created_query(end - start), at=end)
    if not created.series:
        return arrived.none_found(start, end), list(created.warnings)
    gpus, first, last = [
        await client.query(q, at=end) for q in arrived.pending_queries(end - start, step)
    ]
    warned = [w for r in (created, gpus, first, last) for w in r.warnings]
    came = arrived.arrivals(start, end, created=created, gpus=gpus, first=first, last=last)
    return came, warned


async def _chunks(
    client: PromClient,
    query: str,
    chunks: list[tuple[float, float]],
    step: float,
    on_chunk: Callable[[int, int], None] | None,
) -> tuple[list[pd.DataFrame], list[str]]:
    frames, problems = [], []
    for done, (s, e) in enumerate(chunks, start=1):
        answer = await client.query_range(query, s, e, step)
        frames.append(pod_frame([answer]))
        problems += [f"prometheus warning on {s:.0f}-{e:.0f}: {w}" for w in answer.warnings]
        if on_chunk is not None:
            on_chunk(done, len(chunks))
    return frames, problems
