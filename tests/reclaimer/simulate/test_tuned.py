"""The bound a sharing pod's share puts on its memory (`sim_share_memory`)."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pandas as pd
import pytest
from simworld import HOUR, STEP, P, pods_frame, profile_frame

from reclaimer.policy.settings import Policy
from reclaimer.simulate.memory import parse_memory
from reclaimer.simulate.planning import planner_for
from reclaimer.simulate.replay import simulate
from reclaimer.simulate.results import SimResult
from reclaimer.simulate.settings import SimSettings
from reclaimer.simulate.share_memory import memory_shares
from reclaimer.simulate.strategies import Strategy
from reclaimer.simulate.trace import parse_nodes, parse_pods, parse_profiles

IDLE = profile_frame([0.0] * 240)
TWO = [P("ls-1", "LS", 0.0, 2 * HOUR), P("ls-2", "LS", 0.0, 2 * HOUR)]


def _nodes(models: list[str]) -> pd.DataFrame:
    """One 1-GPU node per model."""
    names = [f"node-{i}" for i in range(len(models))]
    return pd.DataFrame({"sn": names, "gpu": 1, "model": models})


def _memory(gib: float, pods: tuple[str, ...] = ("pod-a",)) -> pd.DataFrame:
    """`gib` GiB held throughout, by each of `pods`, one sample a minute."""
    times = [1.6e9 + STEP * i for i in range(240)]
    return pd.DataFrame(
        {
            "timestamp_anon": times * len(pods),
            "value": [gib * 2**30] * 240 * len(pods),
            "container_ip": [p for p in pods for _ in times],
        }
    )


def _replay(
    pods: list[P],
    models: list[str],
    strategy: Strategy,
    gib: float,
    profile: pd.DataFrame = IDLE,
    **settings: object,
) -> SimResult:
    """A replay with every node in the pool, the memory file's largest value read as GiB."""
    profiles = parse_profiles(profile)
    names = tuple(dict.fromkeys(profile["container_ip"]))
    memory = parse_memory(_memory(gib, names), profiles, gib)
    base = replace(SimSettings(strategy), pool_share=1.0, **settings)  # type: ignore[arg-type]
    return simulate(
        parse_pods(pods_frame(pods)),
        parse_nodes(_nodes(models)),
        profiles,
        base,
        planner=planner_for(Policy()),
        memory=memory,
    )


# -- a GPU-sharing pod's memory ------------------------------------------------------------------
SHARING = [P(f"ls-{i}", "LS", 0.0, 2 * HOUR, gpu_milli=400) for i in (1, 2)]
WHOLE = [P(f"ls-{i}", "LS", 0.0, 2 * HOUR) for i in (1, 2)]


@pytest.mark.parametrize(
    ("pods", "cap", "killed"),
    [(SHARING, True, False), (SHARING, False, True), (WHOLE, True, True)],
    ids=["sharing-pods-within-their-share", "bound-turned-off", "whole-gpu-pods-unbounded"],
)
def test_a_sharing_pod_holds_at_most_its_share_of_its_gpu(pods, cap, killed):
    """Two pods replaying 12 GiB series on one time-sliced T4 (16 GiB): 400-milli sharing pods
    hold at most 0.4 x 16 = 6.4 GiB each, 12.8 together, so neither is OOM-killed; unbounded,
    24 GiB do not fit."""
    result = _replay(pods, ["T4"], Strategy.TIMESLICE, 12.0, share_memory_cap=cap)

    assert result.timesliced_gpus == 1
    assert (result.oom_kills > 0) is killed


def test_a_pod_replaying_its_own_measured_memory_is_not_bounded_by_its_share():
    """Named as the profiles' pods (an export-history trace), the two replay their own series,
    12 GiB each, as measured: their 400-milli share bounds nothing and they do not fit."""
    own = profile_frame([0.0] * 240)
    both = pd.concat([own, own.assign(container_ip="pod-b")])
    pods = [P(name, "LS", 0.0, 2 * HOUR, gpu_milli=400) for name in ("pod-a", "pod-b")]

    result = _replay(pods, ["T4"], Strategy.TIMESLICE, 12.0, both)

    assert result.own_utilization_jobs == 2
    assert result.oom_kills > 0


def test_memory_shares_bound_only_drawn_sharing_pods():
    jobs = parse_pods(
        pods_frame([P("a", "LS", 0.0, HOUR, gpu_milli=250), P("b", "LS", 1.0, HOUR),
                    P("pod-a", "LS", 2.0, HOUR, gpu_milli=500)])
    )  # fmt: skip
    shares = memory_shares(jobs, parse_profiles(IDLE))  # IDLE's one pod is `pod-a`

    assert shares.tolist() == [0.25, np.inf, np.inf]
