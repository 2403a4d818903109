"""Each GPU job's recent utilization as bucket means over the window: gaps stay gaps."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest
from clusterviews import job_with_pods, view

from reclaimer.forecast.history import History
from reclaimer.model import PodPhase
from reclaimer.report.usage import recent_usage

NOW = 10_000.0


def history(rows: list[tuple[str, float, float]], step: float = 10.0) -> History:
    """The per-job arrays holding these samples (times on a 10 s grid from NOW - 1000 s)."""
    keys = tuple(sorted({job for job, _, _ in rows}))
    start = NOW - 1000.0
    values = np.full((len(keys), int(1000 / step) + 1), np.nan, dtype=np.float32)
    for job, at, value in rows:
        values[keys.index(job), int((at - start) // step)] = value
    return History(keys, start, step, values)


def test_bucket_means_oldest_first_with_gaps() -> None:
    cluster = view([job_with_pods("a", "j", "q", [("p0", 2), ("p1", 2)])])
    frame = history(
        [
            ("a/j", NOW - 700, 0.9),  # before the window: left out
            ("a/j", NOW - 590, 0.2),  # bucket 0
            ("a/j", NOW - 460, 0.4),  # bucket 0
            ("a/j", NOW - 100, 1.0),  # bucket 3
            ("a/j", NOW, 0.5),  # the newest sample belongs to the last bucket
            ("other/j", NOW - 10, 0.7),  # holds no GPUs: no row
        ]
    )
    (usage,) = recent_usage(cluster, frame, {}, NOW, window=600, points=4).values()
    assert (usage.job, usage.queue, usage.gpus) == ("a/j", "q", 4)
    first, *middle, last = usage.points
    assert first == pytest.approx(0.3) and middle == [None, None] and last == pytest.approx(0.75)
    assert usage.window_seconds == 600 and usage.unknown == ""


def test_jobs_without_samples_have_no_points_and_say_why() -> None:
    busy = job_with_pods("a", "busy", "q", [("b0", 1)])
    quiet = job_with_pods("a", "quiet", "q", [("q0", 1)])
    job, pods = job_with_pods("a", "gone", "q", [("g0", 1)])
    done = (job, [replace(pods[0], phase=PodPhase.SUCCEEDED)])
    frame = history([("a/busy", NOW - 10, 0.5)])
    got = recent_usage(view([busy, quiet, done]), frame, {"a/quiet": "no samples"}, NOW, points=3)
    assert sorted(got) == ["a/busy", "a/quiet"]  # a finished pod holds no GPUs
    assert got["a/quiet"].points == (None, None, None)
    assert got["a/quiet"].unknown == "no samples"
    assert got["a/busy"].points == (None, None, 0.5)


def test_no_history_at_all() -> None:
    cluster = view([job_with_pods("a", "j", "q", [("p0", 1)])])
    got = recent_usage(cluster, history([]), {}, NOW, points=2)
    assert got["a/j"].points == (None, None)
