"""Hand-made traces for the simulator tests: pods, nodes and utilization profiles as frames."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from reclaimer.policy.settings import Policy
from reclaimer.simulate.jobs import Event
from reclaimer.simulate.planning import planner_for
from reclaimer.simulate.replay import simulate
from reclaimer.simulate.results import SimResult
from reclaimer.simulate.settings import SimSettings
from reclaimer.simulate.strategies import Strategy
from reclaimer.simulate.trace import parse_nodes, parse_pods, parse_profiles

HOUR = 3600.0
STEP = 60.0


@dataclass(frozen=True)
class P:
    """One trace pod: queue (qos), arrival, runtime, GPUs (or milli-GPUs when sharing)."""

    name: str
    qos: str
    arrival: float
    runtime: float
    num_gpu: int = 1
    gpu_milli: int = 1000


def pods_frame(pods: Sequence[P]) -> pd.DataFrame:
    return pd.DataFrame(
        {
            "name": [p.name for p in pods],
            "cpu_milli": 1000,
            "memory_mib": 1024,
            "num_gpu": [p.num_gpu for p in pods],
            "gpu_milli": [p.gpu_milli for p in pods],
            "gpu_spec": "",
            "qos": [p.qos for p in pods],
            "pod_phase": "Succeeded",
            "creation_time": [p.arrival for p in pods],
            "deletion_time": [p.arrival + p.runtime for p in pods],
            "scheduled_time": [p.arrival for p in pods],
        }
    )


def nodes_frame(gpus: Sequence[int]) -> pd.DataFrame:
    return pd.DataFrame(
        {
            "sn": [f"node-{i}" for i in range(len(gpus))],
            "cpu_milli": 64000,
            "memory_mib": 262144,
            "gpu": list(gpus),
            "model": "T4",
        }
    )


def profile_frame(percent: Sequence[float], repeat: int = 1) -> pd.DataFrame:
    """One pod's utilization (percent), one sample a minute, the pattern repeated."""
    values = list(percent) * repeat
    return pd.DataFrame(
        {
            "value": values,
            "timestamp_anon": [1.6e9 + STEP * i for i in range(len(values))],
            "container_ip": "pod-a",
        }
    )


IDLE = profile_frame([0.0] * 240)
"""Never busy: four hours of zeros."""
BURSTY = profile_frame([0.0] * 40 + [50.0] * 10, repeat=6)
"""Idle 40 minutes, busy 10, over and over."""
WORKING_4_OF_5 = profile_frame([0.0] + [50.0] * 4, repeat=20)
"""Busy four minutes of every five: any whole number of 5-minute steps is 80% work."""


def run(
    pods: Sequence[P],
    gpus: Sequence[int],
    strategy: Strategy,
    profile: pd.DataFrame = IDLE,
    *,
    seed: int = 0,
    reclaim_policy: Policy | None = None,
    events: list[Event] | None = None,
) -> SimResult:
    """Replay `pods` on nodes of `gpus` GPUs; `events`, when given, collects every job event."""
    reclaim = reclaim_policy or Policy()
    settings = SimSettings(
        strategy=strategy,
        seed=seed,
        checkpoint_seconds=reclaim.checkpoint_interval_seconds,
    )
    return simulate(
        parse_pods(pods_frame(pods)),
        parse_nodes(nodes_frame(gpus)),
        parse_profiles(profile),
        settings,
        planner=planner_for(reclaim),
        on_event=None if events is None else events.append,
    )


COLD_STARTS = pd.DataFrame(
    {"timestamp_anon": [1.6e9, 1.6e9 + STEP], "value": [20_000.0, 40_000.0], "container_ip": "m"}
)
"""Two model loads, 20 s and 40 s (GenTD26's `basemodel_update_latency` format, milliseconds)."""


def write_trace(
    directory: Path, pods: Sequence[P], gpus: Sequence[int], profile: pd.DataFrame = IDLE
) -> dict[str, Path]:
    """The files `simulate` reads, each under the key of its flag (`trace_paths.FLAGS`)."""
    paths = {
        "pods": directory / "pods.csv",
        "nodes": directory / "nodes.csv",
        "utilization": directory / "util.csv",
        "cold_start": directory / "loads.csv",
    }
    pods_frame(pods).to_csv(paths["pods"], index=False)
    nodes_frame(gpus).to_csv(paths["nodes"], index=False)
    profile.to_csv(paths["utilization"], index=False)
    COLD_STARTS.to_csv(paths["cold_start"], index=False)
    return paths
