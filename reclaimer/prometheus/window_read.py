"""Read a past window of per-pod GPU history from Prometheus, in chunks (`export-history`).

A cycle's read (`prometheus.reads`) wants the last day, now; this reads any [start, end] whole,
with the same per-pod query (`history.pod_utilization_query`: the exporter's series, the
recording rules when they cover the window, or dcgm-exporter's), cut on the same step grid
(`history.time_chunks`, `CHUNK_POINTS` points a request). Chunks are fetched one after another
and each is turned into a per-pod frame (`history.pod_frame`) as it arrives, so only one chunk's
answer is held at a time. Requests: the recording-rule probe (gpu-reclaim source only), four
instant queries over the whole window (`prometheus.window`: placements, node GPUs, queues, device
memory), the arrivals' four (`prometheus.arrivals`: one when kube-state-metrics is not there),
one `query_range` per chunk, and for the gpu-reclaim source one more per chunk for the pods'
memory, on the same grid (`window.pod_memory_query`). Any failure raises `WindowUnavailable`;
warnings go to `problems`.
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
    series_frame,
    time_chunks,
)
from reclaimer.prometheus.reads import MetricsUnavailable, probe_recorded
from reclaimer.prometheus.series import QueryResult
from reclaimer.prometheus.window import (
    WindowRead,
    device_memory,
    device_memory_query,
    node_gpus_query,
    placement_query,
    placements,
    pod_memory_query,
    queue_query,
)

CHUNK_POINTS = 1440  # points per series per request: a day at one a minute
NO_POD_MEMORY = (
    "dcgm-exporter has no per-pod GPU memory (its pod-labelled DCGM_FI_DEV_FB_USED is the "
    "device's value, copied to each pod): no memory.csv, so a replay of this export OOM-kills "
    "nothing"
)
FrameOf = Callable[[list[QueryResult]], pd.DataFrame]


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
        placed, nodes, queues, devices = [
            await client.query(q, at=end) for q in _instant_queries(source, window)
        ]
        came, ksm_warnings = await _arrivals(client, start, end, step)
        chunks = time_chunks(align(start, step), align(end, step), step, params.max_points)
        reads = _range_reads(source, recorded, step)
        frames, problems = await _chunks(client, reads, chunks, step, on_chunk)
    except (PromError, MetricsUnavailable) as err:
        raise WindowUnavailable(str(err)) from err
    warned = [*placed.warnings, *nodes.warnings, *queues.warnings, *devices.warnings, *ksm_warnings]
    problems += [f"prometheus warning: {w}" for w in warned]
    if not came.found:
        problems.append(arrived.NO_KUBE_STATE)
    if source is MetricsSource.DCGM:
        problems.append(NO_POD_MEMORY)
    return WindowRead(
        pods=pd.concat(frames[0], ignore_index=True),
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
        memory=pd.concat(frames[1], ignore_index=True) if len(frames) > 1 else None,
        device_memory_mib=device_memory(devices),
    )


def _instant_queries(source: MetricsSource, window: float) -> tuple[str, ...]:
    """Placements, node GPUs, queues and device memory, over the whole window."""
    return (
        placement_query(source, window),
        node_gpus_query(window),
        queue_query(window),
        device_memory_query(window),
    )


def _range_reads(source: MetricsSource, recorded: bool, step: float) -> list[tuple[str, FrameOf]]:
    """The chunked reads and how each answer becomes a frame: utilization, then memory."""
    reads: list[tuple[str, FrameOf]] = [(pod_utilization_query(source, recorded, step), pod_frame)]
    if source is MetricsSource.GPU_RECLAIM:
        reads.append((pod_memory_query(step), series_frame))
    return reads


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
    reads: list[tuple[str, FrameOf]],
    chunks: list[tuple[float, float]],
    step: float,
    on_chunk: Callable[[int, int], None] | None,
) -> tuple[list[list[pd.DataFrame]], list[str]]:
    """Each query of `reads` over every chunk, each answer turned into a frame by its own
    function as it arrives; the frames per query, and the answers' warnings."""
    frames: list[list[pd.DataFrame]] = [[] for _ in reads]
    problems: list[str] = []
    total, done = len(reads) * len(chunks), 0
    for s, e in chunks:
        for i, (query, frame_of) in enumerate(reads):
            answer = await client.query_range(query, s, e, step)
            frames[i].append(frame_of([answer]))
            problems += [f"prometheus warning on {s:.0f}-{e:.0f}: {w}" for w in answer.warnings]
            done += 1
            if on_chunk is not None:
                on_chunk(done, total)
    return frames, problems
