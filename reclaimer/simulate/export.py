"""A past window of the user's own cluster as a trace `simulate` replays: the pod list, the node
list and each pod's measured utilization, in the formats `simulate.trace` reads. Pure.

Each pod with GPU history in the window becomes one trace pod named `namespace/pod`: it runs
from its first sample to its last (plus one step), on as many GPUs as it held (the cluster's
request when the cluster still has the pod, else the distinct GPUs Prometheus saw). It arrives
at its creation (`kube_pod_created`, `prometheus.arrivals`) when that lies in the window before
its first sample, else when it started running (a pod already running when the window opens
arrives at its start). On a time-sliced node a one-GPU pod holds one replica's share
(`gpu_milli` = 1000 / replicas, the replicas `simulate.export_nodes` finds). Its utilization
rows (percent, under its name, readable samples only) make the replay give it its own profile
(`simulate.usage`); its memory rows (bytes, `memory.csv` in GenTD26's
`pod_gpu_memory_used_bytes` format, at the utilization's timestamps: the two are read on one
grid) make it replay its own memory, as measured (`simulate.memory`).

A pod that asked for GPUs and was Pending in the window but has no GPU history (it never ran,
or still waits) is a trace pod too, `ran` false: it arrives at its creation (or its first step
seen pending), asks for the GPUs it requested, on its queue, and needs the median runtime of its
queue's pods that ran (of all of them when its queue has none). Its `scheduled_time` is one step
after it was last seen pending, cut at the window's end: when its wait ended, not a start.

Queue (`qos`): the pod's job's queue in the cluster (PodGroup, Volcano Job or queue
annotation; the pods of a workload are read as its one job through their owners, e.g. a Kubeflow
TrainJob's pods -> Job -> JobSet -> TrainJob take the TrainJob's queue), else its Volcano
queue recorded in Prometheus (`RECORDED_POD_QUEUE`), else
`unknown`. A job Kueue admits is on its ClusterQueue. `reclaimable`: the Volcano Queue's flag
where the cluster has that Queue; for a ClusterQueue, true only when it has no nominal GPU quota
(all it runs is borrowed: what the policy's default `kueue.reclaim: borrowed` may stop; a queue
with quota keeps it, and a pod cannot say whether it ran within it); else false (a pod whose
queue is not known is never taken as reclaimable, as the controller would not).
Nodes: the cluster's GPU nodes, plus any node Prometheus saw GPUs on that the cluster no longer
has. Gangs are not modelled: each pod is replayed as its own job, as `simulate` does for openb.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

import gpu_contract as gc
from reclaimer.model import ClusterView, Pod
from reclaimer.prometheus.arrivals import Arrivals, PodKey
from reclaimer.prometheus.window import Placement, WindowRead
from reclaimer.simulate.export_nodes import export_nodes
from reclaimer.simulate.trace import MILLI

UNKNOWN_QUEUE = "unknown"
PODS_FILE, NODES_FILE, UTILIZATION_FILE = "pods.csv", "nodes.csv", "utilization.csv"
MEMORY_FILE = "memory.csv"
EXPORT_POD_COLUMNS = (
    "name",
    "num_gpu",
    "gpu_milli",
    "qos",
    "reclaimable",
    "creation_time",
    "scheduled_time",
    "deletion_time",
    "ran",
)


@dataclass(frozen=True)
class Export:
    pods: pd.DataFrame  # EXPORT_POD_COLUMNS
    nodes: pd.DataFrame  # sn, gpu
    utilization: pd.DataFrame  # value (percent), timestamp_anon, container_ip (= pod name)
    queue_sources: dict[str, int]  # pods whose queue came from: cluster, prometheus, unknown
    arrivals_from_created: int  # pods that ran, arriving at their creation before their start
    never_ran: int  # pods added from their pending GPU demand alone
    memory: pd.DataFrame | None = None  # timestamp_anon, value (bytes), container_ip; or none
    timesliced: dict[str, int] = field(default_factory=dict)  # node -> replicas found
    problems: tuple[str, ...] = ()  # what the export could not square (nodes, memory)


@dataclass(frozen=True)
class _Span:
    """One trace pod before its queue is joined."""

    ident: PodKey
    gpus: int
    milli: int
    arrived: float
    started: float  # for a pod that never ran: when its wait ended
    ended: float
    ran: bool


def build_export(read: WindowRead, view: ClusterView, step: float) -> Export:
    """The trace of the window `read` covers, joined with what the cluster `view` says."""
    nodes = export_nodes(view.nodes, read.node_gpus, read.device_memory_mib)
    ran = _ran(read, view, step, nodes.replicas())
    waited = _never_ran(read.arrivals, {s.ident for s in ran}, step)
    pods, sources = _rows([*ran, *waited], read, view)
    utilization = _utilization(read.pods)
    memory, missing = _memory(read.memory, utilization)
    return Export(
        pods=_with_runtimes(pods),
        nodes=nodes.frame(),
        utilization=utilization,
        queue_sources=dict(sorted(sources.items())),
        arrivals_from_created=sum(s.arrived < s.started for s in ran),
        never_ran=len(waited),
        memory=memory,
        timesliced=nodes.timesliced(),
        problems=(*nodes.problems, *missing),
    )


def arrival(created: float | None, start: float, started: float) -> float:
    """A pod's creation when it lies in the window at or before its start, else its start."""
    return created if created is not None and start <= created <= started else started


def _ran(read: WindowRead, view: ClusterView, step: float, replicas: dict[str, int]) -> list[_Span]:
    """Pods with GPU history: from their first sample to one step after their last."""
    spans = read.pods.groupby(["namespace", "pod"], sort=True)["timestamp"].agg(["min", "max"])
    cluster_pods = {p.key: p for p in view.pods}
    came, out = read.arrivals, []
    for (namespace, name), first, last in zip(spans.index, spans["min"], spans["max"], strict=True):
        ident = (str(namespace), str(name))
        gpus, node = _gpus(cluster_pods.get("/".join(ident)), read.placements.get(ident))
        milli = MILLI // replicas.get(node, 1) if gpus == 1 else MILLI
        arrived = arrival(came.created.get(ident), came.start, float(first))
        out.append(_Span(ident, gpus, milli, arrived, float(first), float(last) + step, True))
    return out


def _never_ran(came: Arrivals, ran: set[PodKey], step: float) -> list[_Span]:
    """Pods pending with a GPU request and no GPU history, until their wait ended."""
    out = []
    for ident, seen in sorted(came.pending.items()):
        if ident not in ran:
            arrived = arrival(came.created.get(ident), came.start, seen.first)
            ended = min(seen.last + step, came.end)
            out.append(_Span(ident, seen.gpus, MILLI, arrived, ended, ended, False))
    return out


def _rows(
    spans: list[_Span], read: WindowRead, view: ClusterView
) -> tuple[pd.DataFrame, Counter[str]]:
    """The pod list, each pod on its queue; and how many queues came from where."""
    jobs = {j.key: j for j in view.jobs}
    job_queue = {p.key: jobs[p.job].queue for p in view.pods if p.job in jobs}
    reclaimable = {
        q.name: q.reclaimable and not (q.cluster_queue and q.guarantee_gpus) for q in view.queues
    }
    rows, sources = [], Counter[str]()
    for s in spans:
        key = "/".join(s.ident)
        queue, source = _queue(job_queue.get(key), read.queues.get(s.ident))
        sources[source] += 1
        rows.append(
            {
                "name": key,
                "num_gpu": s.gpus,
                "gpu_milli": s.milli,
                "qos": queue,
                "reclaimable": "true" if reclaimable.get(queue, False) else "false",
                "creation_time": s.arrived,
                "scheduled_time": s.started,
                "deletion_time": s.ended,
                "ran": "true" if s.ran else "false",
            }
        )
    return pd.DataFrame(rows, columns=list(EXPORT_POD_COLUMNS)), sources


def _with_runtimes(pods: pd.DataFrame) -> pd.DataFrame:
    """Pods that never ran get the median runtime of their queue's pods that ran (else of all)."""
    waited = pods["ran"] == "false"
    if not waited.any():
        return pods
    ran = pods[~waited]
    runtimes = ran["deletion_time"] - ran["scheduled_time"]
    fallback = float(runtimes.median()) if len(runtimes) else 0.0
    need = pods.loc[waited, "qos"].map(runtimes.groupby(ran["qos"]).median()).fillna(fallback)
    pods.loc[waited, "deletion_time"] = pods.loc[waited, "scheduled_time"] + need
    return pods


def _queue(in_cluster: str | None, recorded: str | None) -> tuple[str, str]:
    """The pod's queue and where it came from."""
    if in_cluster:
        return in_cluster, "cluster"
    if recorded:
        return recorded, "prometheus"
    return UNKNOWN_QUEUE, UNKNOWN_QUEUE


def _gpus(pod: Pod | None, placed: Placement | None) -> tuple[int, str]:
    """GPUs and node: the cluster's request where it still has the pod, else what was seen."""
    gpus = pod.gpus if pod is not None and pod.gpus > 0 else (placed.gpus if placed else 1)
    node = (pod.node if pod is not None else None) or (placed.node if placed else "")
    return max(1, gpus), node


def _utilization(pods: pd.DataFrame) -> pd.DataFrame:
    readable = pods[pods["value"].notna()]
    # one name string per pod, referenced by each of its rows (not one string per sample)
    groups = readable.groupby(["namespace", "pod"], sort=True)
    keys = groups.size().index  # in group number order
    names = np.array([f"{ns}/{pod}" for ns, pod in keys.tolist()], dtype=object)
    return pd.DataFrame(
        {
            "value": np.round(readable["value"].to_numpy(dtype=np.float64) * 100.0, 3),
            "timestamp_anon": readable["timestamp"].to_numpy(dtype=np.float64),
            "container_ip": names[groups.ngroup().to_numpy()],
        }
    )


def _memory(
    memory: pd.DataFrame | None, utilization: pd.DataFrame
) -> tuple[pd.DataFrame | None, tuple[str, ...]]:
    """The pods' memory rows at their utilization's timestamps (a step with no readable
    utilization has no profile sample to go with); and a problem naming the pods with none."""
    if memory is None:
        return None, ()
    readable = memory[memory["value"].notna()]
    if readable.empty:
        return None, (f"no {gc.POD_MEMORY} samples in the window: no {MEMORY_FILE}",)
    rows = pd.DataFrame(
        {
            "timestamp_anon": readable["timestamp"].to_numpy(dtype=np.float64),
            "value": readable["value"].to_numpy(dtype=np.float64).round().astype(np.int64),
            "container_ip": (readable["namespace"] + "/" + readable["pod"]).to_numpy(dtype=object),
        }
    )
    keys = ["container_ip", "timestamp_anon"]
    rows = rows.merge(utilization[keys], on=keys, how="inner")
    absent = sorted(set(utilization["container_ip"]) - set(rows["container_ip"]))
    if not absent:
        return rows, ()
    return rows, (
        f"{len(absent)} pod(s) with utilization but no GPU memory sample, e.g. {absent[0]}: "
        f"`simulate --memory` refuses {MEMORY_FILE}, which must name every pod of "
        f"{UTILIZATION_FILE} (nothing is made up for them)",
    )


def write_export(export: Export, out: Path) -> dict[str, Path]:
    """Write the files into `out` (created if missing): pods, nodes, utilization, and memory
    when the source has it; raises OSError."""
    out.mkdir(parents=True, exist_ok=True)
    paths = {
        "pods": out / PODS_FILE,
        "nodes": out / NODES_FILE,
        "utilization": out / UTILIZATION_FILE,
    }
    export.pods.to_csv(paths["pods"], index=False)
    export.nodes.to_csv(paths["nodes"], index=False)
    export.utilization.to_csv(paths["utilization"], index=False)
    if export.memory is not None:
        paths["memory"] = out / MEMORY_FILE
        export.memory.to_csv(paths["memory"], index=False)
    return paths
