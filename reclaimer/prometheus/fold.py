"""Prometheus answers folded into the per-pod History one at a time, and the per-job History. Pure.

Theory of operation. A read's rows are known before it starts: the view's running pods that hold
GPUs (`pod_rows`). `pod_matrix` allocates the window (NaN), copies what the previous read already
holds for the steps it will not fetch again, and each `query_range` answer is `fold`ed into it
as soon as it arrives (its points written to their grid cells, then the answer dropped), so a
read never holds more than the answers in flight. Cell values: a ratio 0..1 clipped, `UNREADABLE`
(-1) for a step where the pod held its GPU and the exporter could not read it (the query's
negative marker, or a NaN point), NaN for no point at all. `pod_shards` cuts the rows into the
groups of one request; `pod_selector` names a group in PromQL.
`job_history` takes, at each step, the busiest known value of each job's pods (unreadable and
missing steps count as no value); `jobs_of` does so for the jobs whose usage is known
(`prometheus.coverage`). `pod_history_of` / `pod_frame_of` convert to and from the long pod frame.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

import numpy as np
import pandas as pd

from reclaimer.forecast.history import ROW_BLOCK, History
from reclaimer.model import ClusterView, PodPhase
from reclaimer.prometheus.coverage import Recent, running_gpu_pods, unknown_usage
from reclaimer.prometheus.series import QueryResult

UNREADABLE = -1.0  # allocated, utilization not readable: the query's marker and the cell value
_REGEX_SPECIAL = frozenset("\\.^$|?*+()[]{}")


def pod_rows(view: ClusterView) -> tuple[str, ...]:
    """Sorted keys ("namespace/pod") of the running pods that hold GPUs: a read's rows."""
    return tuple(sorted({p.key for p in view.pods if p.gpus > 0 and p.phase is PodPhase.RUNNING}))


def pod_matrix(
    keys: Sequence[str],
    window_start: float,
    end: float,
    step: float,
    *,
    previous: History | None,
    fetched_from: float,
) -> History:
    """The window [window_start, end] for `keys`, NaN but for the previous read's values at
    the steps before `fetched_from` (those are not fetched again)."""
    columns = round((end - window_start) / step) + 1
    values = np.full((len(keys), max(columns, 0)), np.nan, dtype=np.float32)
    out = History(tuple(keys), window_start, step, values)
    if previous is None or previous.step != step or not previous.columns:
        return out
    shift = round((previous.start - window_start) / step)  # previous column 0 here
    keep = round((fetched_from - window_start) / step)  # columns [0, keep) are kept
    lo, hi = max(0, shift), min(keep, shift + previous.columns, columns)
    if hi <= lo:
        return out
    where = {k: i for i, k in enumerate(previous.keys)}
    rows = [(i, where[k]) for i, k in enumerate(keys) if k in where]
    if rows:
        new, old = (np.array(r, dtype=np.intp) for r in zip(*rows, strict=True))
        values[new, lo:hi] = previous.values[old, lo - shift : hi - shift]
    return out


def fold(history: History, rows: Mapping[str, int], result: QueryResult) -> None:
    """Write one matrix answer's points into `history` (in place); series of other pods, and
    points off the window, are ignored."""
    for s in result.series:
        row = rows.get(f"{s.labels.get('namespace', '')}/{s.labels.get('pod', '')}")
        if row is None or not s.points:
            continue
        points = np.asarray(s.points, dtype=np.float64)
        cols = np.rint((points[:, 0] - history.start) / history.step).astype(np.int64)
        raw = points[:, 1]
        value = np.where(np.isnan(raw) | (raw < 0), UNREADABLE, np.clip(raw, 0.0, 1.0))
        inside = (cols >= 0) & (cols < history.columns)
        history.values[row, cols[inside]] = value[inside]


def pod_shards(keys: Sequence[str], size: int) -> list[Sequence[str]]:
    """`keys` in consecutive groups of at most `size`."""
    size = max(1, size)
    return [keys[i : i + size] for i in range(0, len(keys), size)]


def pod_selector(keys: Iterable[str]) -> str:
    """A PromQL matcher for the pods named in `keys` (a raw-string regex of their names)."""
    names = sorted({k.split("/", 1)[-1] for k in keys})
    escaped = ("".join("\\" + c if c in _REGEX_SPECIAL else c for c in n) for n in names)
    return f"pod=~`{'|'.join(escaped)}`"


def jobs_of(pods: History, view: ClusterView, recent: Recent) -> tuple[History, dict[str, str]]:
    """(per-job history of the jobs whose usage is known, job -> why the others' is not)."""
    unknown = unknown_usage(pods, view, recent)
    members = {
        job: [p.key for p in ps] for job, ps in running_gpu_pods(view).items() if job not in unknown
    }
    return job_history(pods, members), unknown


def pod_history_of(frame: pd.DataFrame) -> History:
    """A long pod frame (namespace, pod, timestamp, value; NaN: unreadable) as fold cells."""
    keyed = pd.DataFrame(
        {
            "key": frame["namespace"].astype(str) + "/" + frame["pod"].astype(str),
            "timestamp": frame["timestamp"],
            "value": frame["value"].fillna(UNREADABLE),
        }
    )
    return History.from_frame(keyed, "key")


def pod_frame_of(pods: History) -> pd.DataFrame:
    """The fold cells as a long pod frame (namespace, pod, timestamp, value; NaN: unreadable)."""
    frame = pods.to_frame("key")
    ns_pod = frame["key"].str.split("/", n=1, expand=True)
    return pd.DataFrame(
        {
            "namespace": ns_pod[0] if len(frame) else frame["key"],
            "pod": ns_pod[1] if len(frame) else frame["key"],
            "timestamp": frame["timestamp"],
            "value": frame["value"].where(frame["value"] >= 0),
        }
    )


def job_history(pods: History, members: Mapping[str, Sequence[str]]) -> History:
    """Per job (sorted), the max over its pods' known values at each step; NaN where none."""
    jobs = sorted(members)
    where = {k: i for i, k in enumerate(pods.keys)}
    values = np.full((len(jobs), pods.columns), np.nan, dtype=np.float32)
    for lo in range(0, len(jobs), ROW_BLOCK):
        block = jobs[lo : lo + ROW_BLOCK]
        rows = [[where[k] for k in members[j] if k in where] for j in block]
        flat = np.array([r for rs in rows for r in rs], dtype=np.intp)
        if not flat.size:
            continue
        picked = pods.values[flat]
        picked[picked < 0] = np.nan
        owner = np.repeat(np.arange(len(block)), [len(rs) for rs in rows])
        out = values[lo : lo + len(block)]
        np.fmax.at(out, owner, picked)
    return History(tuple(jobs), pods.start, pods.step, values)
