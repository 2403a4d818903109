"""The fleet summary counts each unit for what it is: GPU slots, physical GPUs, MIG instances.

Idle GPUs of a namespace never exceed the physical GPUs its pods hold: pods sharing one
time-sliced GPU add up to that GPU, however many replicas they hold.
"""

from __future__ import annotations

from types import MappingProxyType

import pandas as pd
import pytest

from reclaimer.forecast.history import History
from reclaimer.model import ClusterView, Node, Pod, PodPhase
from reclaimer.prometheus.fold import pod_history_of
from reclaimer.report.fleet import render, summarize

NOW = 1_000_000.0
WINDOW = 3600.0
SMALL = "nvidia.com/mig-1g.10gb"


def _pod(ns: str, name: str, node: str, gpus: int = 1, mig: dict[str, int] | None = None) -> Pod:
    return Pod(
        key=f"{ns}/{name}",
        namespace=ns,
        name=name,
        node=node,
        gpus=gpus,
        phase=PodPhase.RUNNING,
        mig=MappingProxyType(mig or {}),
    )


def _frame(utilization: dict[tuple[str, str], float]) -> History:
    """The reader's per-pod history of these utilizations, three samples each in the window."""
    rows = [
        {"namespace": ns, "pod": pod, "timestamp": NOW - age, "value": u}
        for (ns, pod), u in utilization.items()
        for age in (60.0, 600.0, 1800.0)
    ]
    return pod_history_of(pd.DataFrame(rows, columns=["namespace", "pod", "timestamp", "value"]))


def _view(nodes: list[Node], pods: list[Pod]) -> ClusterView:
    return ClusterView(
        taken_at=NOW, queues=(), jobs=(), pods=tuple(pods), nodes=tuple(nodes), pending=()
    )


SHARED = Node("shared", gpus=1, replicas=4)
WHOLE = Node("whole", gpus=2)
MIXED_MIG = Node("mig", gpus=1, mig=MappingProxyType({SMALL: 7}))
SINGLE_MIG = Node("single", gpus=1, mig=MappingProxyType({"nvidia.com/gpu": 7}))
DRA_GPU, DRA_MIG = "dra:gpu.nvidia.com", "dra:gpu.nvidia.com/mig-1g.10gb"
DRA = Node("dra", gpus=4, mig=MappingProxyType({DRA_GPU: 4, DRA_MIG: 7}), dra=True)


CASES = [
    pytest.param(
        [SHARED],
        [_pod("a", f"p{i}", "shared") for i in range(4)],
        {("a", f"p{i}"): 0.0 for i in range(4)},
        {"allocated_gpu_slots": 4, "allocated_gpus": 1.0, "idle_gpus_by_namespace": {"a": 1.0}},
        id="four-idle-sharers-are-one-gpu",
    ),
    pytest.param(
        [SHARED],
        [_pod("a", "p0", "shared"), _pod("b", "p1", "shared", gpus=3)],
        {("a", "p0"): 0.0, ("b", "p1"): 0.2},
        {"idle_gpus_by_namespace": {"a": 0.25}, "busy_ratio": 0.6, "measured_gpus": 1.0},
        id="sharers-utilizations-add-up-to-the-gpu",
    ),
    pytest.param(
        [WHOLE, MIXED_MIG],
        [_pod("a", "w", "whole", gpus=2), _pod("a", "m", "mig", mig={SMALL: 1})],
        {("a", "w"): 0.0, ("a", "m"): 0.0},
        {
            "allocated_gpus": 2.0,
            "allocated_mig_instances": 1,
            "idle_gpus_by_namespace": {"a": 2.0},
            "idle_mig_instances_by_namespace": {"a": 1},
        },
        id="mig-instances-are-not-gpus",
    ),
    pytest.param(
        [SINGLE_MIG],
        [_pod("a", "s", "single", gpus=2)],
        {("a", "s"): 0.0},
        {"allocated_gpu_slots": 0, "allocated_mig_instances": 2, "busy_ratio": None},
        id="single-strategy-gpus-are-mig-instances",
    ),
    pytest.param(
        [DRA],
        [
            _pod("a", "d", "dra", gpus=2, mig={DRA_GPU: 2}),
            _pod("b", "m", "dra", gpus=1, mig={DRA_MIG: 1}),
        ],
        {("a", "d"): 0.0, ("b", "m"): 0.0},
        {
            "allocated_gpu_slots": 2,
            "allocated_gpus": 2.0,
            "allocated_mig_instances": 1,
            "idle_gpus_by_namespace": {"a": 2.0},
            "idle_mig_instances_by_namespace": {"b": 1},
        },
        id="dra-gpus-are-gpus-and-dra-mig-devices-mig-instances",
    ),
    pytest.param(
        [],
        [_pod("a", "x", "gone")],
        {},
        {"allocated_gpus": 1.0, "measured_gpus": 0.0, "busy_ratio": None, "idle_gpus": 0},
        id="unknown-node-unmeasured",
    ),
]


@pytest.mark.parametrize(("nodes", "pods", "util", "expected"), CASES)
def test_units(
    nodes: list[Node],
    pods: list[Pod],
    util: dict[tuple[str, str], float],
    expected: dict[str, object],
) -> None:
    got = summarize(_view(nodes, pods), _frame(util), NOW, WINDOW, 0.05).as_dict()
    assert {k: got[k] for k in expected} == expected


def test_idle_gpus_never_exceed_the_gpus_held() -> None:
    nodes = [SHARED, Node("shared8", gpus=2, replicas=8)]
    pods = [_pod("a", f"p{i}", "shared") for i in range(4)]
    pods += [_pod("a", f"q{i}", "shared8", gpus=2) for i in range(8)]
    util = {(p.namespace, p.name): 0.0 for p in pods}
    s = summarize(_view(nodes, pods), _frame(util), NOW, WINDOW, 0.05)
    assert s.idle_gpus == pytest.approx(3.0)
    assert s.idle_gpus <= sum(n.gpus for n in nodes)


def test_render_speaks_of_slots_and_gpus_in_the_right_number() -> None:
    pods = [_pod("a", "p0", "shared"), _pod("b", "m", "mig", mig={SMALL: 1})]
    util = {("a", "p0"): 0.0, ("b", "m"): 0.0}
    text = render(summarize(_view([SHARED, MIXED_MIG], pods), _frame(util), NOW, WINDOW, 0.05))
    assert text.splitlines() == [
        "Fleet: 1 GPU slot allocated (0.25 GPUs), 1 MIG instance, 0.25 GPUs measured, "
        "busy 0% over the last 60 min; 0.25 GPUs idle (< 5%)",
        "  idle in a: 1 GPU slot = 0.25 GPUs",
        "  idle in b: 1 MIG instance",
    ]
