"""A replay of measured memory: the pods' bytes as they are, against each node's measured device
memory (`gpu_memory_mib`), not its model's; an OOM kill where, and only where, they overflow."""

from __future__ import annotations

import pandas as pd
import pytest
from simworld import HOUR, STEP, P, nodes_frame, pods_frame, profile_frame

from reclaimer.policy.settings import Policy
from reclaimer.simulate import sweep
from reclaimer.simulate.jobs import Event, EventKind
from reclaimer.simulate.planning import planner_for
from reclaimer.simulate.replay import simulate
from reclaimer.simulate.results import SimResult
from reclaimer.simulate.settings import SimSettings
from reclaimer.simulate.sharing.memory import parse_memory, peak_for
from reclaimer.simulate.strategies import Strategy
from reclaimer.simulate.trace import parse_nodes, parse_pods, parse_profiles

GIB = 2**30
SAMPLES = 240  # four hours, one sample a minute
GROWS = 180  # b's memory grows at its third hour: a restarted b cannot reach it before a ends
PODS = [P("pod-a", "LS", 0.0, 4 * HOUR), P("pod-b", "LS", 0.0, 4 * HOUR)]


def _b_gib() -> list[float]:
    return [13.0 if GROWS <= i < GROWS + 20 else 8.0 for i in range(SAMPLES)]


def _memory() -> pd.DataFrame:
    rows = {"pod-a": [8.0] * SAMPLES, "pod-b": _b_gib()}
    return pd.concat(
        [
            pd.DataFrame(
                {
                    "timestamp_anon": [1.6e9 + STEP * i for i in range(SAMPLES)],
                    "value": [g * GIB for g in gib],
                    "container_ip": name,
                }
            )
            for name, gib in rows.items()
        ],
        ignore_index=True,
    )


def _replay(device_mib: float | None, events: list[Event]) -> SimResult:
    """Both pods on one T4 (16 GiB by its model) measured at `device_mib` (None: a node list
    without device memory, the bytes scaled to 16 GiB at the largest)."""
    util = pd.concat(
        [profile_frame([30.0] * SAMPLES).assign(container_ip=p.name) for p in PODS],
        ignore_index=True,
    )
    profiles = parse_profiles(util)
    frame = nodes_frame([1, 1])
    nodes = parse_nodes(frame if device_mib is None else frame.assign(gpu_memory_mib=device_mib))
    return simulate(
        parse_pods(pods_frame(PODS)),
        nodes,
        profiles,
        SimSettings(Strategy.TIMESLICE, pool_share=1.0),
        planner=planner_for(Policy()),
        memory=parse_memory(_memory(), profiles, peak_for(nodes, 16.0)),
        on_event=events.append,
    )


def test_the_pod_that_grows_past_the_measured_device_is_killed_at_its_growth():
    events: list[Event] = []
    # 8 + 13 = 21 GiB on a 20 GiB device, only while b holds 13
    result = _replay(20 * 1024.0, events)

    starts = [e for e in events if e.kind is EventKind.STARTED]
    assert [e.at for e in starts[:2]] == [0.0, 0.0]  # side by side from the start
    oom = [e for e in events if e.kind is EventKind.OOM_KILLED]
    assert result.oom_kills == len(oom) == 1
    assert result.memory_replay == "as measured"
    assert oom[0].job == 1  # pod-b
    # 30% each runs at full speed, so progress is time; the kill lands in the share step
    # (5 minutes, read sample by sample) that holds b's first 13 GiB sample
    step = SimSettings(Strategy.TIMESLICE).share_step_seconds
    assert oom[0].at == oom[0].progress
    assert oom[0].progress <= GROWS * STEP < oom[0].progress + step


def test_pods_that_fill_the_measured_device_exactly_are_not_killed():
    events: list[Event] = []
    # 8 + 13 = 21 GiB on a 21 GiB device: it fits; by the T4's 16 GiB it would not
    assert _replay(21 * 1024.0, events).oom_kills == 0
    assert not [e for e in events if e.kind is EventKind.OOM_KILLED]


def test_without_device_memory_in_the_node_list_the_bytes_are_scaled_and_the_result_says_so():
    events: list[Event] = []
    result = _replay(None, events)

    # b's 13 GiB is the file's largest: 16 GiB on the T4, a's 8 GiB 16 x 8 / 13: over 16 at once
    assert result.memory_replay == "scaled"
    assert next(e.at for e in events if e.kind is EventKind.OOM_KILLED) == 0.0


@pytest.mark.parametrize("gib", [8.0, 13.0], ids=["8-gib", "13-gib"])
def test_measured_bytes_are_replayed_as_they_are(gib):
    profiles = parse_profiles(profile_frame([30.0] * 4))
    memory = pd.DataFrame(
        {
            "timestamp_anon": [1.6e9 + STEP * i for i in range(4)],
            "value": [gib * GIB] * 4,
            "container_ip": "pod-a",
        }
    )

    assert parse_memory(memory, profiles, None).tolist() == [gib] * 4
    assert parse_memory(memory, profiles, 16.0).tolist() == [16.0] * 4  # scaled: largest = 16


def test_every_capacity_of_a_sweep_keeps_the_measured_device_memory():
    frame = pd.DataFrame(
        {
            "sn": ["a", "b", "c", "d"],
            "gpu": [1, 1, 2, 2],
            "gpu_memory_mib": [20480, 24576, None, 81920],
        }
    )
    every = parse_nodes(frame)

    half = sweep.nodes_at(every, 0.5)  # the first node of each GPU count
    assert half.names == ("a", "c")
    assert half.measured_memory and (half.memory(0), half.memory(1)) == (20.0, None)
    assert sweep.nodes_at(every, 1.0).memory_gib[1::2] == (24.0, 80.0)
