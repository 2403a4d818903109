"""history reads against a REAL Prometheus holding backfilled history of a known pattern.

Samples sit at 5, 20, 35 and 50 s past each minute, all with the value of the minute they end, so
`avg_over_time(x[60s])` at a minute boundary t sees exactly the four samples of (t-60, t] and the
expected per-step value is known exactly. Requests are counted by a recording proxy in front of
Prometheus, independent of the client's own counter.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import numpy as np
import pytest
from aiohttp import web
from clusterviews import job_with_pods, view
from loopback import forward, serve
from promserver import PromServer, history_base, openmetrics, start_prometheus

import gpu_contract as gc
from reclaimer.model import DataQuality
from reclaimer.plan.planner import data_gate
from reclaimer.policy.settings import Policy
from reclaimer.prometheus.client import PromClient
from reclaimer.prometheus.history import HistoryParams, MetricsSource
from reclaimer.prometheus.reads import read_metrics
from reclaimer.prometheus.sharing import load_query

pytestmark = [pytest.mark.prometheus, pytest.mark.slow]

MIN = 60.0
SPAN = 120  # minutes of history
OFFSETS = (-55.0, -40.0, -25.0, -10.0)


def f32(x: float) -> float:
    """A value as the float32 history holds it."""
    return float(np.float32(x))


def busy_c(t: float) -> float:
    """A deterministic pattern: 0.0, 0.1, ..., 0.9 by minute."""
    return (int(t // MIN) % 10) / 10


def samples(base: float, f) -> list[tuple[float, float]]:
    return [(base + m * MIN + o, f(base + m * MIN)) for m in range(1, SPAN + 1) for o in OFFSETS]


def pod(ns: str, name: str, gpu: str, node: str = "n1") -> dict[str, str]:
    return {
        "namespace": ns,
        "pod": name,
        "container": "main",
        "gpu": gpu,
        "UUID": f"GPU-{node}-{gpu}",
        "Hostname": node,
    }


def dev(gpu: str, node: str = "n1", **extra: str) -> dict[str, str]:
    return {
        "gpu": gpu,
        "UUID": f"GPU-{node}-{gpu}",
        "Hostname": node,
        "device": f"nvidia{gpu}",
        "modelName": "NVIDIA H100",
        "pci_bus_id": "0",
        "DCGM_FI_DRIVER_VERSION": "550",
        **extra,
    }


def fleet_history(base: float, extra_pods: int = 0) -> str:
    s = []
    for gpu, val in (("0", 0.8), ("1", 0.6)):  # team-a/a-0 on two GPUs: max is 0.8
        s.append((gc.POD_UTILIZATION, pod("team-a", "a-0", gpu), samples(base, lambda t, v=val: v)))
        s.append((gc.POD_ALLOCATED, pod("team-a", "a-0", gpu), samples(base, lambda t: 1.0)))
    for p, gpu in (("b-0", "2"), ("b-1", "3")):  # allocated, utilization never readable
        s.append((gc.POD_ALLOCATED, pod("team-b", p, gpu), samples(base, lambda t: 1.0)))
    s.append((gc.POD_UTILIZATION, pod("team-c", "c-0", "4"), samples(base, busy_c)))
    s.append((gc.POD_ALLOCATED, pod("team-c", "c-0", "4"), samples(base, lambda t: 1.0)))
    for i in range(extra_pods):
        lab = pod("bulk", f"p-{i}", str(8 + i), node="n2")
        s.append((gc.POD_UTILIZATION, lab, samples(base, lambda t: 0.5)))
        s.append((gc.POD_ALLOCATED, lab, samples(base, lambda t: 1.0)))
    for gpu, util in (("0", 40.0), ("1", 60.0)):
        s.append((gc.DCGM_GPU_UTIL, dev(gpu), samples(base, lambda t, u=util: u)))
        s.append((gc.DCGM_FB_USED, dev(gpu), samples(base, lambda t: 3000.0)))
        s.append((gc.DCGM_FB_FREE, dev(gpu), samples(base, lambda t: 1000.0)))
    return openmetrics(s)


def cluster(extra_pods: int = 0):
    jobs = [
        job_with_pods("team-a", "train-a", "qa", [("a-0", 2)]),
        job_with_pods("team-b", "idle-b", "qb", [("b-0", 1), ("b-1", 1)]),
        job_with_pods("team-c", "wave-c", "qc", [("c-0", 1)]),
    ]
    jobs += [job_with_pods("bulk", f"j-{i}", "qd", [(f"p-{i}", 1)]) for i in range(extra_pods)]
    return view(jobs)


class Recorder:
    """A loopback proxy that counts the requests the client sends to Prometheus."""

    def __init__(self, target: str) -> None:
        self.target = target
        self.paths: list[str] = []
        self.forms: list[dict[str, str]] = []

    async def handle(self, request: web.Request) -> web.Response:
        self.paths.append(request.path)
        form = {k: str(v) for k, v in (await request.post()).items()}
        self.forms.append(form)
        return await forward(self.target, request, form)


@pytest.fixture(scope="module")
def base() -> float:
    return history_base()


@pytest.fixture(scope="module")
def prom(tmp_path_factory: pytest.TempPathFactory, base: float):
    work: Path = tmp_path_factory.mktemp("prom")
    with start_prometheus(work, history=fleet_history(base, extra_pods=40)) as server:
        yield server


@pytest.fixture
async def recorder(prom: PromServer) -> AsyncIterator[tuple[Recorder, str]]:
    rec = Recorder(prom.url)
    async with serve(rec.handle) as url:
        yield rec, url


async def test_history_matches_the_pattern_on_the_step_grid(prom: PromServer, base: float) -> None:
    now = base + SPAN * MIN + 7.0  # deliberately off-grid
    params = HistoryParams(window=60 * MIN, step=MIN, stats_window=600.0, max_age=300.0)
    async with PromClient(prom.url) as client:
        read = await read_metrics(client, cluster(40), now, params, MetricsSource.GPU_RECLAIM)
    assert read.complete, read.problems
    assert read.metrics_at == base + SPAN * MIN - 10.0  # newest backfilled sample
    assert not read.recorded
    h = read.history
    assert set(h["timestamp"] % MIN) == {0.0}  # on the step grid
    a = h[h["job"] == "team-a/train-a"]
    assert len(a) == 61 and set(a["value"]) == {f32(0.8)}  # busiest GPU of the pod
    # allocated but never a utilization sample: the exporter could not read the GPU (it reports
    # 0 for a holder that runs nothing), so the job is unknown, never idle
    assert h[h["job"] == "team-b/idle-b"].empty
    assert read.unknown["team-b/idle-b"] == (
        "team-b/b-0: GPU unreadable at 15 recent step(s) (allocated, no utilization); "
        "team-b/b-1: GPU unreadable at 15 recent step(s) (allocated, no utilization)"
    )
    assert set(read.unknown) == {"team-b/idle-b"}
    c = h[h["job"] == "team-c/wave-c"]
    assert [round(v, 6) for v in c["value"]] == [busy_c(t) for t in c["timestamp"]]
    stats = read.node_stats["n1"]
    assert [g.utilization for g in stats] == [0.4, 0.6]
    assert [g.memory_used_ratio for g in stats] == [0.75, 0.75]


@pytest.mark.parametrize(
    ("max_points", "chunks"), [(10_000, 1), (30, 3)], ids=["one-chunk", "three-chunks"]
)
async def test_request_count_is_fixed_whatever_the_pod_count(
    prom: PromServer, recorder: tuple[Recorder, str], base: float, max_points: int, chunks: int
) -> None:
    rec, url = recorder
    now = base + SPAN * MIN
    params = HistoryParams(window=60 * MIN, step=MIN, max_points=max_points)
    async with PromClient(url) as client:
        read = await read_metrics(client, cluster(40), now, params, MetricsSource.GPU_RECLAIM)
        again = await read_metrics(
            client,
            cluster(40),
            now,
            params,
            MetricsSource.GPU_RECLAIM,
            recorded=read.recorded,
            load=read.load,
        )
    # 43 jobs, 44 pods: probe + freshness + chunks + 3 node-stat + 3 per-pod device queries
    # + the hourly node load, pods' memory peaks and 3 contention queries, then no probe, no
    # load, no peaks and no contention (the hour has not turned)
    assert rec.paths.count("/api/v1/query_range") == 2 * chunks + 1
    assert len(rec.paths) == (1 + 1 + chunks + 3 + 3 + 2 + 3) + (1 + chunks + 3 + 3)
    assert read.requests == 13 + chunks and again.requests == 7 + chunks
    assert len(set(read.history["job"])) == 42 and set(read.unknown) == {"team-b/idle-b"}
    assert len(read.history) == len(again.history) == 42 * 61


async def test_recording_rules_are_preferred_when_present(tmp_path: Path, base: float) -> None:
    lab = {"namespace": "team-c", "pod": "c-0"}
    text = openmetrics(
        [
            (gc.RECORDED_POD_UTILIZATION_5M, lab, samples(base, lambda t: 0.25)),
            (gc.RECORDED_POD_ALLOCATED, lab, samples(base, lambda t: 1.0)),
            (gc.POD_ALLOCATED, pod("team-c", "c-0", "4"), samples(base, lambda t: 1.0)),
            (gc.POD_UTILIZATION, pod("team-c", "c-0", "4"), samples(base, lambda t: 0.9)),
        ]
    )
    params = HistoryParams(window=30 * MIN, step=MIN)
    with start_prometheus(tmp_path, history=text) as server:
        async with PromClient(server.url) as client:
            read = await read_metrics(
                client, cluster(), base + SPAN * MIN, params, MetricsSource.GPU_RECLAIM
            )
    assert read.recorded
    c = read.history[read.history["job"] == "team-c/wave-c"]
    assert set(c["value"]) == {f32(0.25)}
    assert read.unknown["team-a/train-a"] == "team-a/a-0: no utilization series"  # left out


async def test_dcgm_source_divides_percent_and_ignores_virtual_gpu_copies(
    tmp_path: Path, base: float
) -> None:
    text = openmetrics(
        [
            # device series without pod labels, then the pod-labelled copy, and a
            # --kubernetes-virtual-gpus duplicate of it (same pod, another virtual device)
            (gc.DCGM_GPU_UTIL, dev("0"), samples(base, lambda t: 70.0)),
            (
                gc.DCGM_GPU_UTIL,
                dev("0", pod="c-0", namespace="team-c", container="main"),
                samples(base, lambda t: 70.0),
            ),
            (
                gc.DCGM_GPU_UTIL,
                dev("0", pod="c-0", namespace="team-c", container="main", device="nvidia0-vgpu1"),
                samples(base, lambda t: 70.0),
            ),
        ]
    )
    params = HistoryParams(window=30 * MIN, step=MIN)
    only_c = view([job_with_pods("team-c", "wave-c", "qc", [("c-0", 1)])])
    with start_prometheus(tmp_path, history=text) as server:
        async with PromClient(server.url) as client:
            read = await read_metrics(client, only_c, base + SPAN * MIN, params, MetricsSource.DCGM)
    assert read.complete, read.problems
    assert set(read.history["value"]) == {f32(0.7)}
    assert read.node_stats["n1"][0].utilization == 0.7


async def test_data_gone_quiet_is_reported(prom: PromServer, base: float) -> None:
    now = base + SPAN * MIN + 3600.0
    async with PromClient(prom.url) as client:
        read = await read_metrics(
            client, cluster(), now, HistoryParams(window=3600.0), MetricsSource.GPU_RECLAIM
        )
    assert read.metrics_at is None  # nothing within Prometheus' 5-minute lookback
    stop = data_gate(DataQuality(read.metrics_at), Policy(), now)
    assert stop is not None and "is the exporter scraped?" in stop.detail
    assert set(read.unknown) == {"team-a/train-a", "team-b/idle-b", "team-c/wave-c"}


@pytest.mark.parametrize("kept", ["pod_history", "pods"], ids=["history", "frame"])
async def test_later_reads_fetch_only_the_new_tail(
    prom: PromServer, recorder: tuple[Recorder, str], base: float, kept: str
) -> None:
    rec, url = recorder
    params = HistoryParams(window=60 * MIN, step=MIN, refetch_steps=2)
    first_at, now = base + 100 * MIN, base + SPAN * MIN
    async with PromClient(url) as client:
        first = await read_metrics(client, cluster(), first_at, params, MetricsSource.GPU_RECLAIM)
        rec.forms.clear()
        later = await read_metrics(
            client,
            cluster(),
            now,
            params,
            MetricsSource.GPU_RECLAIM,
            recorded=False,
            previous=getattr(first, kept),
        )
        full = await read_metrics(
            client, cluster(), now, params, MetricsSource.GPU_RECLAIM, recorded=False
        )
    ranges = [f for f in rec.forms if "start" in f and f.get("query") != load_query()]
    assert float(ranges[0]["start"]) == first_at - 2 * MIN  # the tail plus 2 re-read steps
    key = ["job", "timestamp"]
    got = later.history.sort_values(key).reset_index(drop=True)
    want = full.history.sort_values(key).reset_index(drop=True)
    assert got.equals(want)
    assert float(got["timestamp"].min()) == now - 60 * MIN  # trimmed to the window


async def test_young_recording_rules_are_not_used(tmp_path: Path, base: float) -> None:
    lab = {"namespace": "team-c", "pod": "c-0"}
    young = [(t, v) for t, v in samples(base, lambda t: 0.25) if t > base + (SPAN - 30) * MIN]
    text = openmetrics(
        [
            (gc.RECORDED_POD_UTILIZATION_5M, lab, young),
            (gc.RECORDED_POD_ALLOCATED, lab, [(t, 1.0) for t, _ in young]),
            (gc.POD_ALLOCATED, pod("team-c", "c-0", "4"), samples(base, lambda t: 1.0)),
            (gc.POD_UTILIZATION, pod("team-c", "c-0", "4"), samples(base, lambda t: 0.9)),
        ]
    )
    params = HistoryParams(window=30 * MIN, step=MIN, recorded_min_age=3600.0)
    only_c = view([job_with_pods("team-c", "wave-c", "qc", [("c-0", 1)])])
    with start_prometheus(tmp_path, history=text) as server:
        async with PromClient(server.url) as client:
            read = await read_metrics(
                client, only_c, base + SPAN * MIN, params, MetricsSource.GPU_RECLAIM
            )
    assert not read.recorded  # only 30 minutes old: raw series used
    assert set(read.history["value"]) == {f32(0.9)}


async def test_pod_shards_bound_each_answer_and_give_the_same_history(
    prom: PromServer, recorder: tuple[Recorder, str], base: float
) -> None:
    rec, url = recorder
    now = base + SPAN * MIN
    whole = HistoryParams(window=60 * MIN, step=MIN)
    sharded = HistoryParams(window=60 * MIN, step=MIN, pods_per_request=10, points_per_request=300)
    async with PromClient(url) as client:
        one = await read_metrics(client, cluster(40), now, whole, MetricsSource.GPU_RECLAIM)
        rec.forms.clear()
        many = await read_metrics(client, cluster(40), now, sharded, MetricsSource.GPU_RECLAIM)
    ranges = [f for f in rec.forms if "start" in f and f.get("query") != load_query()]
    assert len(ranges) == 5 * 3  # 44 GPU pods, 10 per answer; 61 steps, 30 per answer
    assert all(f["query"].count("pod=~`") == 3 for f in ranges)  # max, NaN check, allocation
    np.testing.assert_array_equal(many.pod_history.values, one.pod_history.values)
    assert many.jobs.keys == one.jobs.keys and many.unknown == one.unknown
    np.testing.assert_array_equal(many.jobs.values, one.jobs.values)


async def test_a_pod_new_to_a_later_read_gets_its_whole_window(
    prom: PromServer, recorder: tuple[Recorder, str], base: float
) -> None:
    """The previous read did not know team-c's pod (the cluster view lagged): its history is
    fetched whole, not only the tail the other pods need."""
    rec, url = recorder
    params = HistoryParams(window=60 * MIN, step=MIN, refetch_steps=2)
    first_at, now = base + 100 * MIN, base + SPAN * MIN
    without_c = view([job_with_pods("team-a", "train-a", "qa", [("a-0", 2)])])
    async with PromClient(url) as client:
        first = await read_metrics(client, without_c, first_at, params, MetricsSource.GPU_RECLAIM)
        rec.forms.clear()
        later = await read_metrics(
            client, cluster(), now, params, MetricsSource.GPU_RECLAIM, recorded=False,
            previous=first.pod_history,
        )  # fmt: skip
        starts = sorted(
            float(f["start"]) for f in rec.forms if "start" in f and f.get("query") != load_query()
        )
        full = await read_metrics(
            client, cluster(), now, params, MetricsSource.GPU_RECLAIM, recorded=False
        )
    assert starts == [now - 60 * MIN, first_at - 2 * MIN]  # new pods whole, a-0 its tail
    assert later.jobs.keys == full.jobs.keys and "team-c/wave-c" in later.jobs.keys
    np.testing.assert_array_equal(later.jobs.values, full.jobs.values)


@pytest.mark.parametrize("source", [MetricsSource.GPU_RECLAIM, MetricsSource.DCGM])
async def test_a_nan_on_one_gpu_of_a_pod_makes_its_usage_unknown(
    tmp_path: Path, base: float, source: MetricsSource
) -> None:
    """team-a/a-0 holds two GPUs, both idle; one sample of GPU 1 reads NaN three minutes ago.
    `max by` alone skips the NaN and the pod reads GPU 0's 0: idle. It must be unknown."""
    nan_at = base + (SPAN - 3) * MIN - 25.0
    flaky = [(t, float("nan") if t == nan_at else 0.0) for t, _ in samples(base, lambda t: 0.0)]
    zero = samples(base, lambda t: 0.0)
    series = []
    for gpu, points in (("0", zero), ("1", flaky)):
        series.append((gc.POD_UTILIZATION, pod("team-a", "a-0", gpu), points))
        series.append((gc.POD_ALLOCATED, pod("team-a", "a-0", gpu), samples(base, lambda t: 1.0)))
        dcgm = dev(gpu, pod="a-0", namespace="team-a", container="main")
        series.append((gc.DCGM_GPU_UTIL, dcgm, [(t, 100 * v) for t, v in points]))
    only_a = view([job_with_pods("team-a", "train-a", "qa", [("a-0", 2)])])
    params = HistoryParams(window=30 * MIN, step=MIN)
    with start_prometheus(tmp_path, history=openmetrics(series)) as server:
        async with PromClient(server.url) as client:
            read = await read_metrics(client, only_a, base + SPAN * MIN, params, source)
    assert "team-a/train-a" not in read.jobs.keys  # never forecast, so never idle
    assert read.unknown["team-a/train-a"].startswith("team-a/a-0: GPU unreadable at 1 recent")


@pytest.mark.parametrize(
    ("now_after", "newest_after"),
    [(7.0, -10.0), (200.0, -10.0), (-600.0, -600.0 + 110.0)],
    ids=["fresh", "older-than-the-lookahead-window", "samples-after-now"],
)
async def test_freshness_sees_the_newest_sample_and_samples_after_now(
    prom: PromServer, base: float, now_after: float, newest_after: float
) -> None:
    """`metrics_at` is the newest sample up to now + lookahead (120 s): 3.5 minutes old still
    reads as it is (the query's offset branch), and one dated after `now` is seen."""
    end = base + SPAN * MIN
    params = HistoryParams(window=30 * MIN, step=MIN)
    async with PromClient(prom.url) as client:
        read = await read_metrics(
            client, cluster(), end + now_after, params, MetricsSource.GPU_RECLAIM
        )
    assert read.metrics_at == end + newest_after
    ahead = read.metrics_at - (end + now_after)
    assert (ahead > 60.0) == (now_after < 0)  # more than CLOCK_SKEW_TOLERANCE_S: gated


async def test_a_read_prometheus_refuses_as_too_many_samples_is_split_until_it_fits(
    prom: PromServer, tmp_path: Path, base: float, caplog: pytest.LogCaptureFixture
) -> None:
    """A Prometheus whose --query.max-samples is too low for the 44 pods x 61 steps of one
    request answers 422: the read splits the request (fewer pods, then a shorter range) until
    each answer fits, gives the history an unlimited Prometheus gives, and says so."""
    now = base + SPAN * MIN
    params = HistoryParams(window=60 * MIN, step=MIN)
    async with PromClient(prom.url) as client:
        whole = await read_metrics(client, cluster(40), now, params, MetricsSource.GPU_RECLAIM)
    text = fleet_history(base, extra_pods=40)
    limit = ["--query.max-samples=3000"]
    with start_prometheus(tmp_path, history=text, flags=limit) as server:
        async with PromClient(server.url) as client:
            read = await read_metrics(client, cluster(40), now, params, MetricsSource.GPU_RECLAIM)
    assert read.complete, read.problems
    np.testing.assert_array_equal(read.pod_history.values, whole.pod_history.values)
    assert read.jobs.keys == whole.jobs.keys and read.unknown == whole.unknown
    assert read.requests > whole.requests
    (line,) = [r.getMessage() for r in caplog.records if "too many samples" in r.getMessage()]
    assert "--query.max-samples" in line and "read in requests of at most" in line
