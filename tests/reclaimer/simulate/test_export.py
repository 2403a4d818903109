"""The export's pure parts: history + cluster view -> the trace files, read back by `simulate`'s
own readers; the pod list's `reclaimable` column; own profiles in the replay's usage."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from simworld import P, pods_frame, profile_frame

from reclaimer.model import ClusterView, Job, JobKind, Node, Pod, PodPhase, Queue
from reclaimer.prometheus.arrivals import none_found
from reclaimer.prometheus.series import QueryResult, Series
from reclaimer.prometheus.window import Placement, WindowRead, placements
from reclaimer.simulate.export import UNKNOWN_QUEUE, build_export, write_export
from reclaimer.simulate.sharing.usage import assign_usage
from reclaimer.simulate.trace import (
    TraceError,
    parse_pods,
    parse_profiles,
    read_nodes,
    read_pods,
    read_profiles,
)

STEP = 60.0
T0 = 1.7e9


def _frame(rows: dict[tuple[str, str], list[float]]) -> pd.DataFrame:
    """Per-pod history frame, one sample a step from T0 (NaN: allocated, unreadable)."""
    parts = [
        pd.DataFrame(
            {
                "namespace": ns,
                "pod": pod,
                "timestamp": T0 + STEP * np.arange(len(values)),
                "value": values,
            }
        )
        for (ns, pod), values in rows.items()
    ]
    return pd.concat(parts, ignore_index=True)


def _view() -> ClusterView:
    pods = (
        Pod("a/train-0", "a", "train-0", "n1", 2, PodPhase.RUNNING, job="a/train"),
        Pod("a/nb-0", "a", "nb-0", "shared", 1, PodPhase.RUNNING, job="a/nb"),
    )
    jobs = (
        Job("a/train", JobKind.PYTORCH_JOB, "a", "train", "research", 2, pods=("a/train-0",)),
        Job("a/nb", JobKind.NOTEBOOK, "a", "nb", "prod", 1, pods=("a/nb-0",)),
    )
    queues = (Queue("research", reclaimable=True), Queue("prod", reclaimable=False))
    nodes = (Node("n1", 4), Node("shared", 1, replicas=4), Node("cpu-only", 0))
    return ClusterView(T0, queues, jobs, pods, nodes, ())


def _read() -> WindowRead:
    history = _frame(
        {
            ("a", "train-0"): [0.5, 0.7, np.nan, 0.9],
            ("a", "nb-0"): [0.0, 0.0],
            ("b", "gone-0"): [0.2, 0.4, 0.6],
            ("c", "lost-0"): [0.1],
        }
    )
    return WindowRead(
        pods=history,
        placements={("b", "gone-0"): Placement(3, "n2"), ("a", "train-0"): Placement(1, "n1")},
        node_gpus={"n1": 4, "n2": 8, "": 1},
        queues={("b", "gone-0"): "batch", ("a", "train-0"): "recorded-but-cluster-wins"},
        arrivals=none_found(T0, T0 + 10 * STEP),
        recorded=False,
        requests=5,
        problems=(),
    )


def test_each_pod_gets_its_queue_gpus_share_and_span():
    export = build_export(_read(), _view(), STEP)
    pods = export.pods.set_index("name")

    assert pods.loc["a/train-0", ["qos", "reclaimable", "num_gpu", "gpu_milli"]].tolist() == [
        "research",
        "true",
        2,  # the cluster's request wins over the UUIDs Prometheus counted
        1000,
    ]
    assert pods.loc["a/nb-0", ["qos", "reclaimable", "gpu_milli"]].tolist() == [
        "prod",
        "false",
        250,
    ]
    assert pods.loc["b/gone-0", ["qos", "reclaimable", "num_gpu"]].tolist() == ["batch", "false", 3]
    assert pods.loc["c/lost-0", ["qos", "reclaimable", "num_gpu"]].tolist() == [
        UNKNOWN_QUEUE,
        "false",
        1,
    ]
    assert pods.loc["a/train-0", "scheduled_time"] == pods.loc["a/train-0", "creation_time"] == T0
    assert pods.loc["a/train-0", "deletion_time"] == T0 + 4 * STEP
    assert export.queue_sources == {"cluster": 2, "prometheus": 1, "unknown": 1}


def test_nodes_are_the_clusters_gpu_nodes_plus_those_only_prometheus_saw():
    nodes = build_export(_read(), _view(), STEP).nodes

    assert list(zip(nodes["sn"], nodes["gpu"], strict=True)) == [
        ("n1", 4),
        ("shared", 1),
        ("n2", 8),
    ]


def test_unreadable_samples_are_left_out_of_the_utilization():
    util = build_export(_read(), _view(), STEP).utilization
    train = util[util["container_ip"] == "a/train-0"]

    assert train["value"].tolist() == [50.0, 70.0, 90.0]
    assert train["timestamp_anon"].tolist() == [T0, T0 + STEP, T0 + 3 * STEP]


def test_written_files_read_back_through_simulates_readers(tmp_path):
    paths = write_export(build_export(_read(), _view(), STEP), tmp_path / "new" / "dir")

    jobs = read_pods(paths["pods"])
    nodes = read_nodes(paths["nodes"])
    profiles = read_profiles(paths["utilization"])

    assert set(jobs.names) == {"a/train-0", "a/nb-0", "b/gone-0", "c/lost-0"}
    assert jobs.reclaimable == frozenset({"research"})
    assert nodes.gpus.sum() == 13
    assert set(profiles.names) == set(jobs.names)
    # the gap at the third sample is carried forward, as for any trace
    train = profiles.names.index("a/train-0")
    start = profiles.starts[train]
    assert profiles.values[start : start + 4].tolist() == [0.5, 0.7, 0.7, 0.9]


def test_a_pod_seen_on_two_nodes_keeps_the_placement_with_most_gpus():
    result = QueryResult(
        "q",
        "vector",
        (
            Series({"namespace": "a", "pod": "p", "Hostname": "n1"}, ((T0, 1.0),)),
            Series({"namespace": "a", "pod": "p", "Hostname": "n2"}, ((T0, 2.0),)),
            Series({"namespace": "a", "Hostname": "n3"}, ((T0, 4.0),)),  # no pod: ignored
        ),
    )

    assert placements(result) == {("a", "p"): Placement(2, "n2")}


RECLAIMABLE_COLUMNS = [
    ("absent", None, None),
    ("flags", ["true", "false", "TRUE"], frozenset({"be", "ls"})),
    ("none-reclaimable", ["false", "false", "false"], frozenset()),
]


@pytest.mark.parametrize(
    ("flags", "expected"),
    [c[1:] for c in RECLAIMABLE_COLUMNS],
    ids=[c[0] for c in RECLAIMABLE_COLUMNS],
)
def test_the_reclaimable_column_names_the_reclaimable_queues(flags, expected):
    frame = pods_frame([P("x", "BE", 0, 60), P("y", "guaranteed", 0, 60), P("z", "LS", 0, 60)])
    if flags is not None:
        frame["reclaimable"] = flags

    assert parse_pods(frame).reclaimable == expected


@pytest.mark.parametrize(
    ("queues", "flags", "message"),
    [
        (["BE", "BE", "LS"], ["true", "true", "yes"], "true or false"),
        (["BE", "be", "LS"], ["true", "false", "false"], "both"),
    ],
    ids=["not-a-flag", "one-queue-both-ways"],
)
def test_a_bad_reclaimable_column_is_refused(queues, flags, message):
    frame = pods_frame([P(f"p{i}", q, 0, 60) for i, q in enumerate(queues)])
    frame["reclaimable"] = flags

    with pytest.raises(TraceError, match=message):
        parse_pods(frame)


def _profiles():
    frames = [
        profile_frame([10.0 * (i % 5)] * 80).assign(container_ip=name)
        for i, name in enumerate(["other-1", "mine", "other-2"])
    ]
    frames[1]["value"] = np.arange(80.0)  # a ramp: every sample tells where it was read
    return parse_profiles(pd.concat(frames, ignore_index=True))


def test_a_job_named_like_a_profile_replays_it_from_its_first_sample():
    usage = assign_usage(
        _profiles(), 3, 7, 1800.0, 900.0, threshold=0.05, job_names=("x", "mine", "y")
    )
    progress = np.arange(80.0) * STEP

    assert usage.own == 1
    assert np.allclose(usage.utilization(np.full(80, 1), progress), np.arange(80.0) / 100)


def test_jobs_without_their_own_keep_the_seeded_draw():
    profiles = _profiles()
    mine = assign_usage(profiles, 3, 7, 1800.0, 900.0, threshold=0.05, job_names=("x", "mine", "y"))
    drawn = assign_usage(profiles, 3, 7, 1800.0, 900.0, threshold=0.05)

    assert drawn.own == 0
    for job in (0, 2):
        assert (mine.start[job], mine.offset[job]) == (drawn.start[job], drawn.offset[job])
