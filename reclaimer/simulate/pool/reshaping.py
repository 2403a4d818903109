"""The time-sliced pool as the controller's planner sees it, and its reshapes in the replay.

**Preempt and resume view.** The device view (`sim_devices`) shows the planner one node per
GPU, in tenths (a pool GPU a multi-GPU pod holds whole, `pooled_devices`, as one such node). A
time-sliced GPU at `R` replicas is shown as `R` nodes `node/gpuN#rK` of one GPU
each, and each pod holding a replica holds one of them whole (in the order the pods started, those
restarting or loading their model last; pods beyond `R`, after a lowering, all sit on the last
one, which then shows less than nothing free):
a pending one-GPU pod, which needs one replica there, fits exactly where a replica is free, and
preempting a holder frees exactly one. The node view for multi-GPU pods leaves the pool out: no
multi-GPU pod can run there.

**Reshape.** `planned_reshapes` runs the controller's `plan()` with only reshapes allowed, on the
pool's nodes as the controller reads them (`Node.replicas`, the per-GPU load and memory of
`sim_pool.timeslice.pool_readings`, the per-pod readings, the load history of `sim_sharing.loadlog`,
`last_reshape`, `reshape_key_at`), so a raise passes the planner's memory-headroom and
load-outlook gates as in the controller. `apply` does what
the actuator does with a reshape: the first cycle writes the new config key (`reshape_key_at`),
a later cycle that plans the same count relabels the node, and only then does the node offer the
new count. Lowering never evicts: the node takes no new pod until its pods drain below the new
count (`sim_scheduler.Cluster.free_replicas`).

**Pods that do not fit.** The pool's OOM kills (`sim_pool.timeslice`) are the replay's container
crashes: each is shown to the planner as `Snapshot.crashes` of its pod on its node, as the
kubelet reports the end of a process whose CUDA allocation failed (exit code 1, `Error`: a
Python process ends so on an uncaught error; k8s-device-plugin #323), so `plan.harm` lowers the
node as it would in the controller, down to 1 replica, and holds its raises (the relabel keeps
the plan's reason, `Node.reshape_reason`). Kills before the node's last reshape, or older than
the longest hold a policy can set, are dropped: no rule reads them. The pods' memory peaks
(`sim_sharing.peaklog`) also set the memory budget's cap (`plan.budget`), which lowers a node before
pods that do not fit are put together; until they name 10 pods the budget is unknown and the
pool keeps the replicas it started with, as a freshly installed controller leaves the
operator's (no pod is measured at the first cycle, and taking the count from later peaks would
be hindsight). `forecast` starts its pool whole (`sim_pool.tuned.start_replicas`), each node
shown to the planner as opted into the managed pool (`Node.pool`), so it shares nothing until
the budget is known and the raise gates pass; with `--forecast-start replicas` it starts at
`--replicas`, and pods the scheduler puts together before the budget is known can crash. No
pending demand is shown, so no pool node is handed back whole
(`plan.handback`): the replay's pool stays the pool, and its multi-GPU pods run off it, or on
the whole GPUs of a pool node at 1 replica (`sim_scheduler`), which is then not raised while
they run (`wide_pods`, `plan.whole_pool`).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import replace

from reclaimer.decisions import ActionKind
from reclaimer.model import (
    ContainerCrash,
    DataQuality,
    MemoryPeaks,
    Node,
    Pod,
    PodGpuUsage,
    PodPhase,
    Snapshot,
)
from reclaimer.policy.fields import MAX_DURATION_SECONDS
from reclaimer.simulate.jobs import Replay
from reclaimer.simulate.pool.busy import contention
from reclaimer.simulate.pool.timeslice import PoolReadings, gpu_uuid, pool_readings
from reclaimer.simulate.sharing.peaklog import RunningPeak
from reclaimer.simulate.strategies import SLOTS_PER_GPU, ReplayPlanner, device_name


def replica_name(node: str, device: int, replica: int) -> str:
    return f"{device_name(node, device)}#r{replica}"


def pool_view(replay: Replay) -> tuple[tuple[Node, ...], Mapping[int, str]]:
    """The device view's nodes (whole GPUs off the pool, replicas on it), and the replica node
    each replica-holding job is shown on."""
    cluster = replay.cluster
    holders = replica_holders(replay)
    whole = pooled_devices(replay)
    nodes: list[Node] = []
    shown: dict[int, str] = {}
    for i, name in enumerate(replay.nodes.names):
        for d in range(int(replay.nodes.gpus[i])):
            if not cluster.sliced[i] or (i, d) in whole:
                nodes.append(Node(name=device_name(name, d), gpus=1, replicas=SLOTS_PER_GPU))
                continue
            count = int(cluster.replicas[i])
            nodes += [
                Node(name=replica_name(name, d, r), gpus=1, replicas=SLOTS_PER_GPU)
                for r in range(count)
            ]
            for r, job in enumerate(holders.get((i, d), [])):
                shown[job] = replica_name(name, d, min(r, count - 1))
    return tuple(nodes), shown


def pooled_devices(replay: Replay) -> set[tuple[int, int]]:
    """The pool's GPUs a multi-GPU pod holds whole (a pool node at 1 replica): shown as whole
    devices, as off the pool."""
    return {
        (run.placement.node, d)
        for run in replay.runs.values()
        if run.placement.pooled
        for d in run.placement.devices
    }


def wide_pods(replay: Replay) -> tuple[Pod, ...]:
    """The pods of the multi-GPU jobs holding pool GPUs whole, on their nodes."""
    names = replay.nodes.names
    out = []
    for job, run in replay.runs.items():
        if run.placement.pooled:
            namespace, name = replay.keys[job].split("/", 1)
            node, gpus = names[run.placement.node], len(run.placement.devices)
            out.append(Pod(replay.keys[job], namespace, name, node, gpus, PodPhase.RUNNING))
    return tuple(out)


def replica_holders(replay: Replay) -> dict[tuple[int, int], list[int]]:
    """Each time-sliced GPU's replica holders: the jobs with work on it (`on_device`), then
    those whose container is restarting or loading its model (holding a replica, no load)."""
    out = {where: list(jobs) for where, jobs in replay.on_device.items()}
    for job, run in replay.runs.items():
        if run.placement.replica and math.isinf(run.warm_at):
            out.setdefault((run.placement.node, run.placement.devices[0]), []).append(job)
    return out


def device_rows(replay: Replay, readings: PoolReadings) -> tuple[PodGpuUsage, ...]:
    """The pool's per-pod readings for the preempt and resume view (`Snapshot.pod_gpus`).

    That view shows each replica of a GPU as a node of its own (`pool_view`), so each pod on a
    time-sliced GPU reads on every replica node of it, with the GPU's id: the pods sharing a GPU
    then share a (node, gpu) on every replica, as contention relief groups them, and a
    guaranteed pod busy there marks every replica of its GPU as a node where a job stopped for
    contention relief must not come back to (`plan.resume`).
    """
    names = replay.nodes.names
    rows: list[PodGpuUsage] = []
    for pod in readings.pods:
        key = replay.runs[pod.job].pods[0].key
        gpu = gpu_uuid(names[pod.node], pod.device)
        rows += [
            PodGpuUsage(key, replica_name(names[pod.node], pod.device, r), gpu, pod.busy)
            for r in range(int(replay.cluster.replicas[pod.node]))
        ]
    return tuple(rows)


def node_rows(replay: Replay, readings: PoolReadings) -> tuple[PodGpuUsage, ...]:
    """The pool's per-pod readings as the controller reads them: on the node, GPU by id."""
    names = replay.nodes.names
    return tuple(
        PodGpuUsage(
            pod=replay.runs[p.job].pods[0].key,
            node=names[p.node],
            gpu=gpu_uuid(names[p.node], p.device),
            busy=p.busy,
            memory_bytes=p.memory_bytes,
        )
        for p in readings.pods
    )


def contended(replay: Replay, readings: PoolReadings, busy_above: float) -> bool:
    """Does a busy reclaimable job share a GPU with a busy guaranteed one? (Could contention
    relief stop anything now; cheap, checked every tick.)"""
    kinds: dict[tuple[int, int], set[bool]] = {}
    for p in readings.pods:
        if p.busy >= busy_above:
            guaranteed = replay.jobs.queues[p.job] in replay.guaranteed
            kinds.setdefault((p.node, p.device), set()).add(guaranteed)
    return any(len(k) == 2 for k in kinds.values())


def shown_pods(pods: tuple[Pod, ...], node: str | None) -> tuple[Pod, ...]:
    return pods if node is None else tuple(replace(p, node=node) for p in pods)


def wants_reshape(replay: Replay, ctl: ReplayPlanner, now: float) -> bool:
    """Could a reshape plan change anything now? (Some pool node out of its cool-down.)"""
    cluster = replay.cluster
    for i in range(len(replay.nodes.names)):
        if not cluster.sliced[i]:
            continue
        last = replay.last_reshape.get(i)
        if i in replay.key_written or last is None or now - last >= ctl.node_cooldown_seconds:
            return True
    return False


def reshape_snapshot(replay: Replay, now: float, readings: PoolReadings | None = None) -> Snapshot:
    """The pool's nodes, as the controller reads them for a reshape: per-GPU stats with ids and
    memory bytes, the per-pod readings (`node_rows`) and the pods' memory peaks over days
    (`sim_sharing.peaklog`): the raise's memory-headroom gate; each node's load history
    (`sim_sharing.loadlog`: the raise's load-outlook gate).

    Only the multi-GPU pods holding a pool node's GPUs whole are shown (`wide_pods`: no raise
    while they run, `plan.whole_pool`): the reshape plan reads other pods only for their
    workload-class label, which no trace pod carries, so the plan is the same without them (and
    far cheaper every cycle).
    """
    cluster = replay.cluster
    readings = pool_readings(replay, now) if readings is None else readings
    stats = readings.stats
    nodes = []
    for i, name in enumerate(replay.nodes.names):
        if not cluster.sliced[i]:
            continue
        written = replay.key_written.get(i)
        nodes.append(
            Node(
                name=name,
                gpus=int(replay.nodes.gpus[i]),
                replicas=int(cluster.replicas[i]),
                gpu_stats=stats[i],
                last_reshape=replay.last_reshape.get(i),
                reshape_key_at=None if written is None else written[0],
                load=replay.load_log.history(i, now),
                reshape_reason=replay.reshape_reasons.get(i, ""),
                pool=True,
            )
        )
    reading, shared, jobs = contention(replay, now)
    return Snapshot(
        taken_at=now,
        queues=replay.queue_objects,
        jobs=jobs,
        pods=wide_pods(replay) + shared,
        nodes=tuple(nodes),
        pending=(),
        quality=DataQuality(metrics_at=now, complete=True),
        last_actions={},
        pod_gpus=node_rows(replay, readings),
        memory_peaks=memory_peaks(replay, now),
        crashes=pool_crashes(replay, now),
        contention=reading,
    )


CRASH_EXIT = 1  # a process ended by an uncaught CUDA out-of-memory error


def pool_crashes(replay: Replay, now: float) -> tuple[ContainerCrash, ...]:
    """The pool's OOM kills as the kubelet reports them (module doc); drops those no rule
    reads any more (before the node's last reshape, or older than any hold)."""
    since = replay.last_reshape
    replay.crashes[:] = [
        (at, node, job)
        for at, node, job in replay.crashes
        if now - at <= MAX_DURATION_SECONDS and at > since.get(node, -math.inf)
    ]
    names = replay.nodes.names
    return tuple(
        ContainerCrash(
            pod=replay.keys[job],
            node=names[node],
            container="main",
            at=at,
            reason="Error",
            exit_code=CRASH_EXIT,
            restarts=loop.restarts if (loop := replay.crash_loops.get(job)) else 0,
        )
        for at, node, job in replay.crashes
    )


def memory_peaks(replay: Replay, now: float) -> MemoryPeaks:
    """The pods' memory peaks as the controller's hourly read gives them (`sim_sharing.peaklog`)."""
    running = (
        RunningPeak(replay.keys[job], job, run.base, run.progress(now))
        for job, run in replay.runs.items()
    )

    def peak_of(job: int, progress_from: float, progress_to: float) -> float:
        gib = replay.node_gib(replay.runs[job].placement.node)  # its bound there
        return replay.usage.memory_peak(job, progress_from, progress_to, gib)

    return replay.peak_log.read(now, running, peak_of)


def planned_reshapes(
    replay: Replay, ctl: ReplayPlanner, now: float, readings: PoolReadings | None = None
) -> None:
    """Plan the pool's reshapes with the controller's `plan()` and apply them as it does."""
    plan = ctl.plan_reshapes(reshape_snapshot(replay, now, readings), {}, now)
    index = {name: i for i, name in enumerate(replay.nodes.names)}
    for action in plan.actions:
        if action.kind is ActionKind.RESHAPE and action.to_replicas is not None:
            apply(replay, index[action.target], action.to_replicas, now, str(action.reason))


def apply(replay: Replay, node: int, replicas: int, now: float, reason: str = "") -> None:
    """The actuator's two steps (`kube.reshaping.reshape_node`): write the key, then, in a later
    cycle planning the same count, relabel the node (recording the plan's `reason`); a
    different count writes its own key."""
    written = replay.key_written.pop(node, None)
    if written is None or written[1] != replicas:
        replay.key_written[node] = (now, replicas)
        return
    replay.cluster.replicas[node] = replicas
    replay.reshape_reasons[node] = reason
    replay.last_reshape[node] = now
    replay.reshapes += 1
    replay.dirty = True  # a raise may let a pending pod in
