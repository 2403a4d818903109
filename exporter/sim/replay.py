"""The `replay` backend: the sim node, with each pod's utilization replayed from a real trace.

The trace is a CSV in the alibaba GenTD26 format (`value` = GPU utilization in percent,
`timestamp_anon` in seconds, `container_ip` = the pod; `.csv.gz` is fine): one series per
container_ip, a sample every 57 s. Each selected container_ip becomes one pod holding one whole
GPU, named `genai/serve-<first 8 hex digits>`. Wall time t maps to trace time
`start + ((t - t0) * speed) mod span`, one clock for all pods so their correlation survives;
between samples the value holds. Where a pod has no sample (before its first, after its last,
or across a gap of more than two sample periods) it holds its GPU with no process. GPU memory
comes from the sibling `pod_gpu_memory_used_bytes` file when present.
"""

from __future__ import annotations

import random
import time
from bisect import bisect_right
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from exporter.sim.backend import SimNode, make_pods, sim_gpus
from exporter.sim.workloads import GIB, PodState, Shape, WorkloadSpec
from exporter.sources import BackendParts

NAMESPACE = "genai"
MIN_SAMPLES = 100  # pods with fewer samples are too short to replay
SAMPLE_PERIOD_S = 57.0  # GenTD26 samples every pod once per 57 s
MAX_GAP_S = 2 * SAMPLE_PERIOD_S


@dataclass(frozen=True)
class TraceSeries:
    """One pod's samples, sorted by time: (timestamp s, value)."""

    timestamps: tuple[float, ...]
    values: tuple[float, ...]

    def at(self, tau: float) -> float | None:
        """The held value at trace time tau, or None where the pod has no sample."""
        i = bisect_right(self.timestamps, tau) - 1
        if i < 0 or tau - self.timestamps[i] > MAX_GAP_S:
            return None
        return self.values[i]


@dataclass(frozen=True)
class Trace:
    start: float
    span: float
    utilization: dict[str, TraceSeries]  # container_ip -> percent
    memory: dict[str, TraceSeries]  # container_ip -> bytes


def _series(frame: pd.DataFrame) -> dict[str, TraceSeries]:
    out = {}
    for ip, rows in frame.sort_values("timestamp_anon").groupby("container_ip", sort=True):
        stamps = tuple(float(x) for x in rows["timestamp_anon"])
        out[str(ip)] = TraceSeries(stamps, tuple(float(x) for x in rows["value"]))
    return out


def load_trace(file: Path) -> Trace:
    """Read a GenTD26 duty-cycle CSV (and its memory sibling, if any)."""
    frame = pd.read_csv(file)
    missing = {"value", "timestamp_anon", "container_ip"} - set(frame.columns)
    if missing:
        raise ValueError(f"{file}: missing columns {sorted(missing)}")
    memory_file = file.with_name(
        file.name.replace("pod_gpu_duty_cycle", "pod_gpu_memory_used_bytes")
    )
    memory = (
        _series(pd.read_csv(memory_file)) if memory_file != file and memory_file.exists() else {}
    )
    start = float(frame["timestamp_anon"].min())
    span = float(frame["timestamp_anon"].max()) - start + SAMPLE_PERIOD_S  # >= one period
    return Trace(start, span, _series(frame), memory)


def choose_pods(trace: Trace, pods: int, seed: int) -> list[str]:
    """`pods` container_ips with enough samples, chosen by the seed, in a stable order."""
    eligible = sorted(ip for ip, s in trace.utilization.items() if len(s.timestamps) >= MIN_SAMPLES)
    if not eligible:
        raise ValueError("the trace has no pod with enough samples to replay")
    return sorted(random.Random(seed).sample(eligible, min(pods, len(eligible))))


def replay_state(trace: Trace, ip: str, t0: float, speed: float) -> Callable[[float], PodState]:
    """Pure: the pod's state at wall time t, replayed from the trace."""
    util, mem = trace.utilization[ip], trace.memory.get(ip)

    def state(t: float) -> PodState:
        tau = trace.start + ((t - t0) * speed) % trace.span
        value = util.at(tau)
        if value is None:
            return PodState(0.0, False, 0)
        held = mem.at(tau) if mem is not None else None
        memory = int(held) if held is not None else 4 * GIB
        return PodState(min(1.0, max(0.0, value / 100.0)), True, memory)

    return state


def build_replay_backend(
    *,
    file: Path,
    speed: float,
    seed: int,
    fixture_dir: Path,
    node_name: str,
    clock: Callable[[], float] = time.time,
    pods: int = 8,
) -> tuple[BackendParts, SimNode]:
    """The `replay` backend: `pods` trace pods, one whole H100 each, on a SimNode."""
    if speed <= 0:
        raise ValueError(f"--replay.speed must be positive, got {speed}")
    trace = load_trace(file)
    ips = choose_pods(trace, pods, seed)
    t0 = clock()
    specs = [
        WorkloadSpec(NAMESPACE, f"serve-{ip[:8]}", "server", Shape.TRAINING) for ip in ips
    ]  # the shape is unused: the trace drives the state
    states = [replay_state(trace, ip, t0, speed) for ip in ips]
    node = SimNode(
        sim_gpus(len(ips), 0, seed),
        make_pods(specs, seed, states),
        seed=seed,
        clock=clock,
        node_name=node_name,
    )
    node.trace_ids = dict(zip([(s.namespace, s.pod) for s in specs], ips, strict=True))
    return node.write_fixtures(fixture_dir), node
