"""`timeslice-tuned` and the sharing pods' memory bound on a node list that gives each node's
device memory (`gpu_memory_mib`, an `export-history` list): the bytes replay as measured, against
the measured devices (`sim_pool.tuned`, `sim_sharing.share_memory`,
`sim_sharing.memory.peak_for`)."""

from __future__ import annotations

from dataclasses import replace

import pandas as pd
from simworld import HOUR, STEP, P, pods_frame, profile_frame

from reclaimer.policy.settings import Policy
from reclaimer.simulate.planning import planner_for
from reclaimer.simulate.pool.tuned import tuned_pool
from reclaimer.simulate.replay import simulate
from reclaimer.simulate.results import SimResult
from reclaimer.simulate.settings import SimSettings
from reclaimer.simulate.sharing.memory import parse_memory, peak_for
from reclaimer.simulate.sharing.usage import assign_usage
from reclaimer.simulate.strategies import Strategy
from reclaimer.simulate.trace import parse_nodes, parse_pods, parse_profiles

GIB = 2**30
SAMPLES = 240


def _memory(gib: float) -> pd.DataFrame:
    """`pod-a` (the one profile) holds `gib` GiB throughout, one sample a minute."""
    times = [1.6e9 + STEP * i for i in range(SAMPLES)]
    return pd.DataFrame({"timestamp_anon": times, "value": gib * GIB, "container_ip": "pod-a"})


def _nodes(mib: list[float | None], models: bool = False) -> pd.DataFrame:
    """One 1-GPU node per entry, measured at that many MiB (None: not measured); without a
    `model` column (as `export-history` writes them: every node `unknown`) unless `models`."""
    frame = pd.DataFrame({"sn": [f"node-{i}" for i in range(len(mib))], "gpu": 1})
    if models:
        frame["model"] = "T4"
    if any(m is not None for m in mib):
        frame["gpu_memory_mib"] = mib
    return frame


def _replay(pods: list[P], nodes: pd.DataFrame, strategy: Strategy, gib: float) -> SimResult:
    """Every node in the pool; the memory file read as `peak_for` says next to `nodes`."""
    profiles = parse_profiles(profile_frame([0.0] * SAMPLES))
    listed = parse_nodes(nodes)
    return simulate(
        parse_pods(pods_frame(pods)),
        listed,
        profiles,
        SimSettings(strategy, pool_share=1.0),
        planner=planner_for(Policy()),
        memory=parse_memory(_memory(gib), profiles, peak_for(listed, gib)),
    )


TWO = [P("ls-1", "LS", 0.0, 2 * HOUR), P("ls-2", "LS", 0.0, 2 * HOUR)]


def test_tuned_sizes_a_measured_device_by_its_measured_memory():
    """12 GiB pods on one GPU measured at 40 GiB, of no model known (an anonymized model's 16
    GiB by default): 3 x 12 = 36 GiB fit 90% of 40, so the GPU takes 3 replicas and both jobs
    share it at once; by the 16 GiB the model would give, it would stay whole."""
    result = _replay(TWO, _nodes([40 * 1024.0]), Strategy.TIMESLICE_TUNED, 12.0)

    assert result.memory_replay == "as measured"
    assert result.tuned_replicas == {
        "unknown": {"p99_peak_gib": 12.0, "device_gib": 40.0, "replicas": 3}
    }
    assert result.timesliced_gpus == 1
    assert result.guaranteed_wait_p95_s == 0.0  # neither waited for the other
    assert result.oom_kills == 0


def test_nodes_of_one_model_measured_at_different_sizes_are_tuned_apart():
    """12 GiB pods: a 40 GiB device takes 3 (36 <= 36), a 20 GiB one 1 (2 x 12 > 18); a node
    whose memory the list leaves empty is read by its model (`unknown`: 16 GiB)."""
    profiles = parse_profiles(profile_frame([0.0] * SAMPLES))
    nodes = parse_nodes(_nodes([40 * 1024.0, 20 * 1024.0, None]))
    jobs = parse_pods(pods_frame(TWO))
    usage = assign_usage(profiles, len(TWO), 0, 1800.0, 900.0, threshold=0.05)
    memory = parse_memory(_memory(12.0), profiles, peak_for(nodes, 12.0))
    settings = SimSettings(Strategy.TIMESLICE_TUNED, pool_share=1.0)

    replicas, models = tuned_pool(jobs, nodes, replace(usage, memory=memory), settings)

    assert replicas is not None and replicas.tolist() == [3, 1, 1]
    assert {name: (m.device_gib, m.replicas) for name, m in models.items()} == {
        "unknown 16 GiB": (16.0, 1),
        "unknown 20 GiB": (20.0, 1),
        "unknown 40 GiB": (40.0, 3),
    }


# Two 500-milli pods drawing pod-a's 10 GiB series onto one GPU of 16 GiB
HALVES = [P(f"ls-{i}", "LS", 0.0, 2 * HOUR, gpu_milli=500) for i in (1, 2)]


def test_a_measured_list_bounds_no_sharing_pods_memory():
    """On an export, `gpu_milli` 500 is a time-slicing replica's share, which bounds no memory:
    10 + 10 GiB pass the measured 16 GiB and one pod is OOM-killed. On an openb T4 (no measured
    memory) the same pods hold at most 0.5 x 16 = 8 GiB each, 16 together: no kill."""
    measured = _replay(HALVES, _nodes([16 * 1024.0], models=True), Strategy.TIMESLICE, 10.0)
    by_model = _replay(HALVES, _nodes([None], models=True), Strategy.TIMESLICE, 10.0)

    assert measured.memory_replay == "as measured" and measured.oom_kills > 0
    assert by_model.memory_replay == "scaled" and by_model.oom_kills == 0
