"""GPU memory of simulated jobs: each job replays the memory series of its utilization profile.

`--memory FILE` is alibaba-gentd26's `pod_gpu_memory_used_bytes` format (`timestamp_anon`,
`value` bytes, `container_ip`). Each profile's memory is laid on the profile's own sample grid
(its first utilization sample and step, `trace.parse_profiles`), nearest sample, gaps filled
with the previous value (the first with the next), so sample `k` of a job's utilization and of
its memory were measured at the same moment on the same pod.

GenTD26 scales its bytes for anonymity (the file's largest pod holds 47.3 GiB, more than most
openb GPUs), so the bytes cannot be read as GiB on an openb device. The mapping is an assumption,
stated and swept: the file's largest value is `peak_gib` GiB (default 16, the smallest openb
GPU), every value in proportion, so every job fits its GPU alone, as it did in the trace.
Parsing is pure; `read_memory` alone touches a file.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from reclaimer.simulate.trace import FloatArray, Profiles, TraceError, read_csv_frame

MEMORY_COLUMNS = ("timestamp_anon", "value", "container_ip")
DEFAULT_PEAK_GIB = 16.0
GIB = 2.0**30  # bytes: the replay holds memory in GiB, the controller reads bytes


def parse_memory(frame: pd.DataFrame, profiles: Profiles, peak_gib: float) -> FloatArray:
    """GiB per profile sample, laid out like `profiles.values`; raises TraceError on bad input."""
    what = "memory"
    missing = [c for c in MEMORY_COLUMNS if c not in frame.columns]
    if missing:
        raise TraceError(f"{what}: missing column(s) {', '.join(missing)}")
    if not peak_gib > 0:
        raise TraceError(f"{what}: the peak must be more than 0 GiB, got {peak_gib}")
    values = pd.to_numeric(frame["value"], errors="coerce")
    times = pd.to_numeric(frame["timestamp_anon"], errors="coerce")
    if values.isna().any() or times.isna().any() or (values < 0).any():
        raise TraceError(f"{what}: value and timestamp_anon must be numbers, value >= 0")
    if not profiles.origins:
        raise TraceError(f"{what}: the utilization profiles carry no sample times")
    top = float(values.max())
    if top <= 0:
        raise TraceError(f"{what}: every value is 0 bytes")
    scale = peak_gib / top
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


def read_memory(path: Path, profiles: Profiles, peak_gib: float = DEFAULT_PEAK_GIB) -> FloatArray:
    return parse_memory(read_csv_frame(path, "memory"), profiles, peak_gib)
