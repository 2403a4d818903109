"""`timeslice-tuned`'s replicas per GPU model, and the bound a sharing pod's share puts on its
memory (`sim_pool.tuned`, `sim_sharing.share_memory`)."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pandas as pd
import pytest
from simworld import HOUR, STEP, P, pods_frame, profile_frame

from reclaimer.policy.settings import Policy
from reclaimer.simulate.planning import planner_for
from reclaimer.simulate.pool.tuned import replicas_for
from reclaimer.simulate.replay import simulate
from reclaimer.simulate.results import SimResult
from reclaimer.simulate.settings import SimSettings
from reclaimer.simulate.sharing.memory import parse_memory
from reclaimer.simulate.sharing.share_memory import memory_shares
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


# -- timeslice-tuned -----------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("peak", "gib", "replicas"),
    [
        (7.5, 16.0, 1),  # over 45% of the GPU: two do not fit its 90%
        (9.0001, 20.0, 1),
        (9.0, 20.0, 2),  # exactly 45%: two fill 90%, which is allowed
        (6.0, 20.0, 3),
        (4.5, 20.0, 4),
        (1.0, 80.0, 4),  # never more than 4
        (0.0, 16.0, 4),  # no memory held
        (20.0, 16.0, 1),  # not even one fits: the node stays whole
    ],
    ids=["over-45pc", "just-over-45pc", "at-45pc", "three", "four", "capped-at-4", "none-held",
         "over-the-gpu"],
)  # fmt: skip
def test_tuned_replicas_are_the_most_that_fit_90pc_of_the_gpu(peak, gib, replicas):
    assert replicas_for(peak, gib) == replicas


@pytest.mark.parametrize(
    ("gib", "replicas", "sliced", "waits"),
    [(7.5, 1, 0, True), (7.0, 2, 1, False)],
    ids=["p99-over-45pc-keeps-the-gpu-whole", "p99-under-45pc-shares-it"],
)
def test_tuned_sizes_each_model_by_the_replays_p99_peak(gib, replicas, sliced, waits):
    """Two 2-hour jobs, one T4 (16 GiB): at 7.5 GiB each (47%) two do not fit 90% of it, so the
    GPU stays whole and one job waits; at 7 GiB (44%) they share it, with no OOM kill."""
    result = _replay(TWO, ["T4"], Strategy.TIMESLICE_TUNED, gib)

    assert result.tuned_replicas == {
        "T4": {"p99_peak_gib": gib, "device_gib": 16.0, "replicas": replicas}
    }
    assert result.timesliced_gpus == sliced
    assert result.oom_kills == 0
    assert (result.guaranteed_wait_p95_s > HOUR) is waits


def test_tuned_chooses_per_gpu_model():
    """7.5 GiB pods: a 16 GiB T4 holds one (2 x 7.5 > 14.4), a 32 GiB V100 three (3 x 7.5 =
    22.5 <= 28.8 < 30): only the V100's node is time-sliced."""
    result = _replay(TWO, ["T4", "V100M32"], Strategy.TIMESLICE_TUNED, 7.5)

    assert {m: c["replicas"] for m, c in result.tuned_replicas.items()} == {"T4": 1, "V100M32": 3}
    assert result.timesliced_gpus == 1


def test_only_tuned_reports_its_choice():
    assert _replay(TWO, ["T4"], Strategy.TIMESLICE, 7.5).tuned_replicas == {}


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


def test_the_bound_reaches_tuned_p99():
    """Tuned budgets the sharing pods at what they may hold on the model: 6.4 GiB of 12."""
    bounded = _replay(SHARING, ["T4"], Strategy.TIMESLICE_TUNED, 12.0)
    unbounded = _replay(SHARING, ["T4"], Strategy.TIMESLICE_TUNED, 12.0, share_memory_cap=False)

    assert bounded.tuned_replicas["T4"]["p99_peak_gib"] == pytest.approx(6.4)
    assert bounded.tuned_replicas["T4"]["replicas"] == 2
    assert unbounded.tuned_replicas["T4"]["replicas"] == 1


def test_memory_shares_bound_only_drawn_sharing_pods():
    jobs = parse_pods(
        pods_frame([P("a", "LS", 0.0, HOUR, gpu_milli=250), P("b", "LS", 1.0, HOUR),
                    P("pod-a", "LS", 2.0, HOUR, gpu_milli=500)])
    )  # fmt: skip
    shares = memory_shares(jobs, parse_profiles(IDLE))  # IDLE's one pod is `pod-a`

    assert shares.tolist() == [0.25, np.inf, np.inf]
