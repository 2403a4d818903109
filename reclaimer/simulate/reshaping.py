"""The time-sliced pool as the controller's planner sees it, and its reshapes in the replay.

**Preempt and resume view.** The device view (`sim_policies`) shows the planner one node per
GPU, in tenths. A time-sliced GPU at `R` replicas is shown as `R` nodes `node/gpuN#rK` of one GPU
each, and each pod holding a replica holds one of them whole (in the order the pods started; pods
beyond `R`, after a lowering, all sit on the last one, which then shows less than nothing free):
a pending one-GPU pod, which needs one replica there, fits exactly where a replica is free, and
preempting a holder frees exactly one. The node view for multi-GPU pods leaves the pool out: no
multi-GPU pod can run there.

**Reshape.** `planned_reshapes` runs the controller's `plan()` with only reshapes allowed, on the
pool's nodes as the controller reads them (`Node.replicas`, the per-GPU load of
`sim_timeslice.pool_stats`, `last_reshape`, `reshape_key_at`). `apply` does what
the actuator does with a reshape: the first cycle writes the new config key (`reshape_key_at`),
a later cycle that plans the same count relabels the node, and only then does the node offer the
new count. Lowering never evicts: the node takes no new pod until its pods drain below the new
count (`sim_scheduler.Cluster.free_replicas`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace

from reclaimer.decisions import ActionKind
from reclaimer.model import DataQuality, Node, Pod, Snapshot
from reclaimer.simulate.jobs import Replay
from reclaimer.simulate.strategies import SLOTS_PER_GPU, ReplayPlanner, device_name
from reclaimer.simulate.timeslice import pool_stats


def replica_name(node: str, device: int, replica: int) -> str:
    return f"{device_name(node, device)}#r{replica}"


def pool_view(replay: Replay) -> tuple[tuple[Node, ...], Mapping[int, str]]:
    """The device view's nodes (whole GPUs off the pool, replicas on it), and the replica node
    each replica-holding job is shown on."""
    cluster = replay.cluster
    nodes: list[Node] = []
    shown: dict[int, str] = {}
    for i, name in enumerate(replay.nodes.names):
        for d in range(int(replay.nodes.gpus[i])):
            if not cluster.sliced[i]:
                nodes.append(Node(name=device_name(name, d), gpus=1, replicas=SLOTS_PER_GPU))
                continue
            count = int(cluster.replicas[i])
            nodes += [
                Node(name=replica_name(name, d, r), gpus=1, replicas=SLOTS_PER_GPU)
                for r in range(count)
            ]
            for r, job in enumerate(replay.on_device.get((i, d), [])):
                shown[job] = replica_name(name, d, min(r, count - 1))
    return tuple(nodes), shown


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


def reshape_snapshot(replay: Replay, now: float) -> Snapshot:
    """The pool's nodes, as the controller reads them for a reshape.

    No pod is shown: the reshape plan reads pods only for their workload-class label, which no
    trace pod carries, so the plan is the same without them (and far cheaper every cycle).
    """
    cluster = replay.cluster
    stats = pool_stats(replay, now)
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
            )
        )
    return Snapshot(
        taken_at=now,
        queues=replay.queue_objects,
        jobs=(),
        pods=(),
        nodes=tuple(nodes),
        pending=(),
        quality=DataQuality(metrics_at=now, complete=True),
        last_actions={},
    )


def planned_reshapes(replay: Replay, ctl: ReplayPlanner, now: float) -> None:
    """Plan the pool's reshapes with the controller's `plan()` and apply them as it does."""
    plan = ctl.plan_reshapes(reshape_snapshot(replay, now), {}, now)
    index = {name: i for i, name in enumerate(replay.nodes.names)}
    for action in plan.actions:
        if action.kind is ActionKind.RESHAPE and action.to_replicas is not None:
            apply(replay, index[action.target], action.to_replicas, now)


def apply(replay: Replay, node: int, replicas: int, now: float) -> None:
    """The actuator's two steps (`kube.reshaping.reshape_node`): write the key, then, in a later
    cycle planning the same count, relabel the node; a different count writes its own key."""
    written = replay.key_written.pop(node, None)
    if written is None or written[1] != replicas:
        replay.key_written[node] = (now, replicas)
        return
    replay.cluster.replicas[node] = replicas
    replay.last_reshape[node] = now
    replay.reshapes += 1
    replay.dirty = True  # a raise may let a pending pod in
