"""Simulator input: the alibaba-openb pod/node lists and per-pod utilization profiles.

`parse_pods` keeps the pods that ran (a `scheduled_time`) and asked for a GPU; each becomes a job
that arrives at `creation_time` and needs `deletion_time - scheduled_time` seconds of running. A
pod asks for `num_gpu` whole GPUs, or, when `gpu_milli` < 1000, that share of one GPU (a
GPU-sharing pod). Its queue is its `qos`, lower-cased (`be`, `ls`, `burstable`, `guaranteed`).
An optional `reclaimable` column (`true`/`false`, what `export-history` writes from the Volcano
queues) says which queues are reclaimable; without it the replay's default (`be`) holds.

`parse_nodes` keeps `capacity_scale` of the nodes of each GPU count (at least one node of the
largest count, so every pod that fits the real cluster still fits), in file order. An optional
`gpu_memory_mib` column (what `export-history` writes from the exporter's device series) gives
each node's memory per GPU; an empty cell leaves that node to its model's memory.

`parse_profiles` turns an alibaba-gentd26 utilization CSV (percent, one sample every ~57 s per
pod) into regular profiles of ratios 0..1 on the median sample step; gaps are filled with the
previous value. Each profile keeps its pod's name (`container_ip`): a job of the same name replays
it as its own (`simulate.usage`); only profiles of `MIN_PROFILE_SAMPLES` or more are drawn for the
other jobs (all of them when none is that long). Profiles are stored flat (`values`, with
`starts`/`lengths` per profile) so lookups are vectorized numpy indexing.
Parsing is pure; only the `read_*` functions touch files.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import numpy.typing as npt
import pandas as pd

FloatArray = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.int64]
BoolArray = npt.NDArray[np.bool_]

MILLI = 1000
MIN_PROFILE_SAMPLES = 64
POD_COLUMNS = ("name", "num_gpu", "gpu_milli", "qos", "creation_time", "deletion_time")
NODE_COLUMNS = ("sn", "gpu")
NODE_MEMORY_COLUMN = "gpu_memory_mib"
UNKNOWN_MODEL = "unknown"
UTIL_COLUMNS = ("value", "timestamp_anon", "container_ip")


class TraceError(ValueError):
    """The input files are not in the expected format; the message says what is wrong."""


@dataclass(frozen=True)
class Jobs:
    """One row per trace pod that ran with a GPU, sorted by arrival (then name)."""

    names: tuple[str, ...]
    queues: tuple[str, ...]
    num_gpu: IntArray  # whole GPUs (1 for a sharing pod)
    milli: IntArray  # milli-GPU per GPU: 1000 for whole GPUs, < 1000 for sharing pods
    arrival: FloatArray
    runtime: FloatArray
    reclaimable: frozenset[str] | None = None  # queues the pod list flags reclaimable, if it says

    @functools.cached_property
    def gpus(self) -> FloatArray:
        """GPU amount each job holds, as a float (0.46 for a 460-milli sharing pod); computed
        once (a replay reads it at every stop, kill and placement), never to be written to."""
        result: FloatArray = self.num_gpu * self.milli / MILLI
        return result


@dataclass(frozen=True)
class Nodes:
    names: tuple[str, ...]
    gpus: IntArray
    models: tuple[str, ...] = ()  # per node, its GPU model (the list's `model` column)
    # per node, GiB per GPU as measured (NaN: not given); empty without a `gpu_memory_mib` column
    memory_gib: tuple[float, ...] = ()

    def model(self, node: int) -> str:
        return self.models[node] if self.models else UNKNOWN_MODEL

    @property
    def measured_memory(self) -> bool:
        """The list gives device memory (a `gpu_memory_mib` column): the nodes were measured."""
        return bool(self.memory_gib)

    def memory(self, node: int) -> float | None:
        """GiB per GPU of `node` as the list gives it, or None (its model's memory applies)."""
        if not self.memory_gib or np.isnan(self.memory_gib[node]):
            return None
        return self.memory_gib[node]


@dataclass(frozen=True)
class Profiles:
    values: FloatArray  # all profiles back to back, ratios 0..1
    starts: IntArray
    lengths: IntArray
    step: float  # seconds between samples
    names: tuple[str, ...] = ()  # per profile, the pod it was measured on
    pool: IntArray | None = None  # profiles drawn for jobs without their own (None: all)
    origins: tuple[float, ...] = ()  # per profile, the time of its first sample

    def drawable(self) -> IntArray:
        """Indices of the profiles a job without its own may be given."""
        if self.pool is None:
            return np.arange(len(self.lengths), dtype=np.int64)
        return self.pool


def _require(frame: pd.DataFrame, columns: tuple[str, ...], what: str) -> None:
    missing = [c for c in columns if c not in frame.columns]
    if missing:
        raise TraceError(f"{what}: missing column(s) {', '.join(missing)}")


def _numeric(frame: pd.DataFrame, column: str, what: str) -> pd.Series:
    values = pd.to_numeric(frame[column], errors="coerce")
    if values.isna().any():
        row = int(np.flatnonzero(values.isna().to_numpy())[0])
        raise TraceError(f"{what}: column {column} is not numeric (row {row + 1})")
    return values


def parse_pods(frame: pd.DataFrame) -> Jobs:
    what = "pods"
    _require(frame, (*POD_COLUMNS, "scheduled_time"), what)
    scheduled = pd.to_numeric(frame["scheduled_time"], errors="coerce")
    num_gpu = _numeric(frame, "num_gpu", what)
    keep = scheduled.notna() & (num_gpu > 0)
    frame = frame.loc[keep]
    if frame.empty:
        raise TraceError(f"{what}: no pod both ran and asked for a GPU")
    num: IntArray = _numeric(frame, "num_gpu", what).to_numpy(dtype=np.int64)
    milli: IntArray = _numeric(frame, "gpu_milli", what).to_numpy(dtype=np.int64)
    created = _numeric(frame, "creation_time", what).to_numpy(dtype=np.float64)
    deleted = _numeric(frame, "deletion_time", what).to_numpy(dtype=np.float64)
    started = scheduled.loc[keep].to_numpy(dtype=np.float64)
    if (milli <= 0).any() or (milli > MILLI).any():
        raise TraceError(f"{what}: gpu_milli must be in 1..{MILLI}")
    if ((milli < MILLI) & (num != 1)).any():
        raise TraceError(f"{what}: a GPU-sharing pod (gpu_milli < {MILLI}) must ask for 1 GPU")
    runtime = deleted - started
    if (runtime < 0).any():
        raise TraceError(f"{what}: deletion_time before scheduled_time")
    order = np.lexsort((frame["name"].astype(str).to_numpy(), created))
    queues = frame["qos"].astype(str).str.lower()
    return Jobs(
        names=tuple(frame["name"].astype(str).to_numpy()[order]),
        queues=tuple(queues.to_numpy()[order]),
        num_gpu=num[order],
        milli=milli[order],
        arrival=created[order],
        runtime=np.maximum(runtime[order], 1.0),
        reclaimable=_reclaimable(frame, queues, what),
    )


def _reclaimable(frame: pd.DataFrame, queues: pd.Series, what: str) -> frozenset[str] | None:
    """The queues flagged reclaimable by a `reclaimable` column; None when there is none."""
    if "reclaimable" not in frame.columns:
        return None
    flags = frame["reclaimable"].astype(str).str.strip().str.lower()
    if not flags.isin(["true", "false"]).all():
        raise TraceError(f"{what}: column reclaimable must be true or false")
    per_queue = flags.eq("true").groupby(queues).agg(["min", "max"])
    mixed = per_queue.index[per_queue["min"] != per_queue["max"]]
    if len(mixed):
        raise TraceError(f"{what}: queue {mixed[0]} is flagged both reclaimable and not")
    return frozenset(str(q) for q in per_queue.index[per_queue["max"]])


def parse_nodes(frame: pd.DataFrame, capacity_scale: float = 1.0) -> Nodes:
    what = "nodes"
    _require(frame, NODE_COLUMNS, what)
    if not 0.0 < capacity_scale <= 1.0:
        raise TraceError(f"capacity scale must be in (0, 1], got {capacity_scale}")
    gpus: IntArray = _numeric(frame, "gpu", what).to_numpy(dtype=np.int64)
    names = frame["sn"].astype(str).to_numpy()
    keep = gpus > 0
    if not keep.any():
        raise TraceError(f"{what}: no node has a GPU")
    largest = int(gpus.max())
    chosen = np.zeros(len(gpus), dtype=bool)
    for count in np.unique(gpus[keep]):
        rows = np.flatnonzero(gpus == count)
        wanted = round(len(rows) * capacity_scale)
        if count == largest:
            wanted = max(wanted, 1)
        chosen[rows[:wanted]] = True
    models = (
        frame["model"].astype(str).to_numpy()
        if "model" in frame.columns
        else np.full(len(gpus), UNKNOWN_MODEL)
    )
    memory = _memory_gib(frame, what)
    return Nodes(
        names=tuple(names[chosen]),
        gpus=gpus[chosen],
        models=tuple(models[chosen]),
        memory_gib=tuple(memory[chosen].tolist()) if len(memory) else (),
    )


def _memory_gib(frame: pd.DataFrame, what: str) -> FloatArray:
    """Each node's `gpu_memory_mib` in GiB (NaN where the cell is empty); none without the
    column."""
    if NODE_MEMORY_COLUMN not in frame.columns:
        return np.empty(0)
    cells = frame[NODE_MEMORY_COLUMN]
    mib = pd.to_numeric(cells, errors="coerce")
    if (mib.isna() & cells.notna()).any() or (mib <= 0).any():
        raise TraceError(f"{what}: {NODE_MEMORY_COLUMN} must be a number of MiB above 0, or empty")
    result: FloatArray = mib.to_numpy(dtype=np.float64) / 1024.0
    return result


def utilization_history(frame: pd.DataFrame) -> pd.DataFrame:
    """alibaba-gentd26 rows (`container_ip`, `timestamp_anon` seconds, `value` percent) as a
    history frame (`job`, `timestamp`, `value` ratio 0..1): the one reader of that format, for
    the replay's profiles and for `forecast-eval`."""
    what = "utilization"
    _require(frame, UTIL_COLUMNS, what)
    if frame.empty:
        raise TraceError(f"{what}: holds no samples")
    return pd.DataFrame(
        {
            "job": frame["container_ip"].astype(str),
            "timestamp": _numeric(frame, "timestamp_anon", what).astype(float),
            "value": np.clip(_numeric(frame, "value", what).astype(float) / 100.0, 0.0, 1.0),
        }
    )


def parse_profiles(frame: pd.DataFrame) -> Profiles:
    what = "utilization"
    history = utilization_history(frame).sort_values(["job", "timestamp"], kind="stable")
    steps = history.groupby("job", sort=False)["timestamp"].diff().dropna()
    steps = steps[steps > 0]
    if steps.empty:
        raise TraceError(f"{what}: no pod has two samples")
    step = float(steps.median())
    chunks: list[FloatArray] = []
    names: list[str] = []
    origins: list[float] = []
    for name, group in history.groupby("job", sort=True):
        t = group["timestamp"].to_numpy(dtype=np.float64)
        slots = np.rint((t - t[0]) / step).astype(np.int64)
        series = np.full(slots[-1] + 1, np.nan)
        series[slots] = group["value"].to_numpy(dtype=np.float64)
        chunks.append(np.asarray(pd.Series(series).ffill(), dtype=np.float64))
        names.append(str(name))
        origins.append(float(t[0]))
    lengths = np.array([len(c) for c in chunks], dtype=np.int64)
    starts = np.concatenate([[0], np.cumsum(lengths)[:-1]]).astype(np.int64)
    long_enough = np.flatnonzero(lengths >= MIN_PROFILE_SAMPLES).astype(np.int64)
    return Profiles(
        values=np.concatenate(chunks),
        starts=starts,
        lengths=lengths,
        step=step,
        names=tuple(names),
        pool=long_enough if len(long_enough) else None,
        origins=tuple(origins),
    )


def read_csv_frame(path: Path, what: str) -> pd.DataFrame:
    try:
        return pd.read_csv(path)
    except FileNotFoundError as exc:
        raise TraceError(f"{what}: no such file {path}") from exc
    except (OSError, ValueError, pd.errors.ParserError) as exc:
        raise TraceError(f"{what}: cannot read {path}: {exc}") from exc


def read_pods(path: Path) -> Jobs:
    return parse_pods(read_csv_frame(path, "pods"))


def read_nodes(path: Path, capacity_scale: float = 1.0) -> Nodes:
    return parse_nodes(read_csv_frame(path, "nodes"), capacity_scale)


def read_profiles(path: Path) -> Profiles:
    return parse_profiles(read_csv_frame(path, "utilization"))


def read_utilization(path: Path) -> pd.DataFrame:
    return utilization_history(read_csv_frame(path, "utilization"))
