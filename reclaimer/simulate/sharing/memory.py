"""GPU memory of simulated jobs: each job replays the memory series of its utilization profile.

`--memory FILE` is alibaba-gentd26's `pod_gpu_memory_used_bytes` format (`timestamp_anon`,
`value` bytes, `container_ip`). Each profile's memory is laid on the profile's own sample grid
(its first utilization sample and step, `trace.parse_profiles`), nearest sample, gaps filled
with the previous value (the first with the next), so sample `k` of a job's utilization and of
its memory were measured at the same moment on the same pod.

Which bytes, the rule: bytes are scaled only where the devices' memory is assumed. GenTD26
scales its bytes for anonymity (the file's largest pod holds 47.3 GiB, more than most openb
GPUs), and openb's devices have only a model name, so there the bytes cannot be read as GiB on
an openb device. That mapping is an assumption, stated and swept: the file's largest value is
`peak_gib` GiB (default 16, the smallest openb GPU), every value in proportion, so every job
fits its GPU alone, as it did in the trace. Where the node list gives each node's device memory
(`gpu_memory_mib`, as `export-history` writes it from the same exporter that measured the pods'
bytes), `peak_gib` is None and the bytes are replayed as they are (bytes / 2^30 GiB): an OOM
kill then happens exactly where the measured pods overflow the measured devices.
Parsing is pure; `read_memory` alone touches a file.
"""

from __future__ import annotations

from enum import StrEnum
from pathlib import Path

import numpy as np
import pandas as pd

from reclaimer.simulate.trace import FloatArray, Nodes, Profiles, TraceError, read_csv_frame

MEMORY_COLUMNS = ("timestamp_anon", "value", "container_ip")
DEFAULT_PEAK_GIB = 16.0
GIB = 2.0**30  # bytes: the replay holds memory in GiB, the controller reads bytes


class MemoryReplay(StrEnum):
    """Which rule a replay's memory followed (its result's `memory_replay`)."""

    NONE = "none"  # no memory file: no job is ever OOM-killed
    SCALED = "scaled"  # the file's largest value is `peak_gib`
    MEASURED = "as measured"  # bytes as they are, against the node list's device memory


def peak_for(nodes: Nodes, peak_gib: float) -> float | None:
    """What to read a memory file with next to `nodes`: None (bytes as they are) where the node
    list gives device memory, else `peak_gib` (module doc)."""
    return None if nodes.measured_memory else peak_gib


def memory_replay(memory: FloatArray | None, nodes: Nodes) -> MemoryReplay:
    """The rule a replay of `memory` on `nodes` followed (`peak_for` chose it)."""
    if memory is None:
        return MemoryReplay.NONE
    return MemoryReplay.MEASURED if nodes.measured_memory else MemoryReplay.SCALED


def parse_memory(frame: pd.DataFrame, profiles: Profiles, peak_gib: float | None) -> FloatArray:
    """GiB per profile sample, laid out like `profiles.values`: the largest value is `peak_gib`
    GiB, or, with None, bytes as they are (module doc). Raises TraceError on bad input."""
    what = "memory"
    missing = [c for c in MEMORY_COLUMNS if c not in frame.columns]
    if missing:
        raise TraceError(f"{what}: missing column(s) {', '.join(missing)}")
    if peak_gib is not None and not peak_gib > 0:
        raise TraceError(f"{what}: the peak must be more than 0 GiB, got {peak_gib}")
    values = pd.to_numeric(frame["value"], errors="coerce")
    times = pd.to_numeric(frame["timestamp_anon"], errors="coerce")
    if values.isna().any() or times.isna().any() or (values < 0).any():
        raise TraceError(f"{what}: value and timestamp_anon must be numbers, value >= 0")
    if not profiles.origins:
        raise TraceError(f"{what}: the utilization profiles carry no sample times")
    top = float(values.max())
    if peak_gib is not None and top <= 0:  # nothing to scale from
        raise TraceError(f"{what}: every value is 0 bytes")
    scale = 1.0 / GIB if peak_gib is None else peak_gib / top
    by_pod = {
        str(pod): (group_t.to_numpy(dtype=np.float64), values[group_t.index].to_numpy())
        for pod, group_t in times.groupby(frame["container_ip"].astype(str))
    }
    absent = [name for name in profiles.names if name not in by_pod]
    if absent:
        raise TraceError(
            f"{what}: no series for {len(absent)} utilization pod(s), e.g. {absent[0]}: "
            "a job must replay the memory of the pod whose utilization it replays"
        )
    out = np.empty_like(profiles.values)
    for i, name in enumerate(profiles.names):
        t, v = by_pod[name]
        start, length = int(profiles.starts[i]), int(profiles.lengths[i])
        slot = np.rint((t - profiles.origins[i]) / profiles.step).astype(np.int64)
        keep = (slot >= 0) & (slot < length)
        series = np.full(length, np.nan)
        series[slot[keep]] = v[keep]
        filled = pd.Series(series).ffill().bfill().fillna(0.0)
        out[start : start + length] = filled.to_numpy(dtype=np.float64) * scale
    return out


def read_memory(
    path: Path, profiles: Profiles, peak_gib: float | None = DEFAULT_PEAK_GIB
) -> FloatArray:
    return parse_memory(read_csv_frame(path, "memory"), profiles, peak_gib)
