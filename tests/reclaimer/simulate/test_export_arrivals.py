"""The export's arrivals: a pod that ran arrives at its creation when that lies in the window
before its first sample; a pod that waited for GPUs and never ran becomes a trace pod with its
queue's median runtime; without kube-state-metrics arrivals stay the starts."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from reclaimer.model import ClusterView, Queue
from reclaimer.prometheus.arrivals import Arrivals, Pending, none_found
from reclaimer.prometheus.window import Placement, WindowRead
from reclaimer.simulate.export import arrival, build_export
from reclaimer.simulate.trace import parse_pods

STEP = 60.0
T0 = 1.7e9
END = T0 + 100 * STEP

ARRIVALS = [
    ("created-in-window-before-start", T0 + 5, T0 + 60, T0 + 5),
    ("created-at-start", T0 + 60, T0 + 60, T0 + 60),
    ("created-before-window", T0 - 600, T0 + 60, T0 + 60),
    ("created-after-start-recreated", T0 + 120, T0 + 60, T0 + 60),
    ("no-creation-known", None, T0 + 60, T0 + 60),
]


@pytest.mark.parametrize(
    ("created", "started", "expected"), [a[1:] for a in ARRIVALS], ids=[a[0] for a in ARRIVALS]
)
def test_a_pod_arrives_at_its_creation_only_in_the_window_and_before_its_start(
    created, started, expected
):
    assert arrival(created, T0, started) == expected


def _history(spans: dict[tuple[str, str], tuple[int, int]]) -> pd.DataFrame:
    """Samples one a step from T0 + first * STEP to T0 + last * STEP, per pod."""
    return pd.concat(
        [
            pd.DataFrame(
                {"namespace": ns, "pod": pod, "timestamp": T0 + STEP * np.arange(a, b + 1)}
            ).assign(value=0.5)
            for (ns, pod), (a, b) in spans.items()
        ],
        ignore_index=True,
    )


def _read(came: Arrivals) -> WindowRead:
    ran = {("t", "fast"): (10, 19), ("t", "slow"): (0, 39), ("u", "solo"): (0, 59)}
    return WindowRead(
        pods=_history(ran),
        placements={k: Placement(1, "n1") for k in ran},
        node_gpus={"n1": 8},
        queues={
            ("t", "fast"): "team",
            ("t", "slow"): "team",
            ("u", "solo"): "other",
            ("t", "waiter"): "team",
            ("x", "stuck"): "nobody-ran",
        },
        arrivals=came,
        recorded=False,
        requests=1,
        problems=(),
    )


KUBE_STATE = Arrivals(
    T0,
    END,
    found=True,
    created={("t", "fast"): T0 + 4 * STEP, ("t", "slow"): T0 - 3600, ("t", "waiter"): T0 + 30},
    pending={
        ("t", "fast"): Pending(1, T0 + 5 * STEP, T0 + 9 * STEP),  # ran: not added again
        ("t", "waiter"): Pending(4, T0 + STEP, T0 + 50 * STEP),  # gave up after 50 steps
        ("x", "stuck"): Pending(2, T0 + 70 * STEP, END),  # still pending at the end
    },
)


def _pods(came: Arrivals) -> pd.DataFrame:
    view = ClusterView(T0, (Queue("team", reclaimable=False),), (), (), (), ())
    return build_export(_read(came), view, STEP).pods.set_index("name")


def test_a_pod_that_ran_arrives_at_its_creation_and_keeps_its_start():
    pods = _pods(KUBE_STATE)

    assert pods.loc["t/fast", ["creation_time", "scheduled_time"]].tolist() == [
        T0 + 4 * STEP,
        T0 + 10 * STEP,
    ]
    # created before the window: today's rule
    assert pods.loc["t/slow", "creation_time"] == pods.loc["t/slow", "scheduled_time"] == T0


def test_pods_that_never_ran_wait_from_creation_and_run_their_queues_median():
    pods = _pods(KUBE_STATE)
    waiter, stuck = pods.loc["t/waiter"], pods.loc["x/stuck"]

    assert (waiter["ran"], waiter["num_gpu"], waiter["qos"], waiter["reclaimable"]) == (
        "false",
        4,
        "team",
        "false",
    )
    assert waiter["creation_time"] == T0 + 30
    assert waiter["scheduled_time"] == T0 + 51 * STEP  # a step after last seen pending
    # team's runs: fast 10 steps, slow 40 steps -> median 25 steps
    assert waiter["deletion_time"] - waiter["scheduled_time"] == 25 * STEP
    # no creation known: its first pending step; cut at the window's end; all pods' median
    assert (stuck["creation_time"], stuck["scheduled_time"]) == (T0 + 70 * STEP, END)
    assert stuck["deletion_time"] - stuck["scheduled_time"] == 40 * STEP


def test_the_export_counts_the_arrivals_and_never_run_pods_and_simulate_keeps_them():
    export = build_export(_read(KUBE_STATE), ClusterView(T0, (), (), (), (), ()), STEP)
    jobs = parse_pods(export.pods)

    assert (export.arrivals_from_created, export.never_ran) == (1, 2)
    assert set(jobs.names) == {"t/fast", "t/slow", "u/solo", "t/waiter", "x/stuck"}
    waiter = jobs.names.index("t/waiter")
    assert (jobs.arrival[waiter], jobs.runtime[waiter]) == (T0 + 30, 25 * STEP)


def test_without_kube_state_metrics_every_pod_arrives_at_its_start():
    export = build_export(_read(none_found(T0, END)), ClusterView(T0, (), (), (), (), ()), STEP)

    assert (export.pods["creation_time"] == export.pods["scheduled_time"]).all()
    assert (export.arrivals_from_created, export.never_ran) == (0, 0)
    assert set(export.pods["ran"]) == {"true"}
