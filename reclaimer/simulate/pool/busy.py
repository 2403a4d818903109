"""What the contention rule reads of a replay (`plan.contend`): the pods' busy and co-busy time
over the last day (`sim_sharing.contentionlog`), and the guaranteed pods on the pool's
time-sliced nodes, whose co-busy share it measures.

Only pods with work on the GPUs of nodes at 2 replicas or more (`Replay.on_device`) are shown,
with their jobs: the rule measures no other node (a whole node has no neighbours to wait for),
and building every running pod every cycle would cost the replay more than the rule reads.
"""

from __future__ import annotations

from reclaimer.model import Contention, Job, Pod, PodPhase
from reclaimer.simulate.jobs import Replay
from reclaimer.simulate.sharing.contentionlog import RunningBusy


def contention(replay: Replay, now: float) -> tuple[Contention, tuple[Pod, ...], tuple[Job, ...]]:
    """The hour's reading, and the guaranteed pods (with their jobs) on time-sliced nodes."""
    running = (
        RunningBusy(replay.keys[job], job, run.base, run.progress(now))
        for job, run in replay.runs.items()
    )
    reading = replay.contention_log.read(
        now, running, replay.usage.nonzero_seconds, replay.cobusy.so_far
    )
    names = replay.nodes.names
    sliced = replay.cluster.replicas >= 2
    pods: list[Pod] = []
    jobs: list[Job] = []
    for (node, _), holders in replay.on_device.items():  # the pool's GPUs and their pods
        if not sliced[node]:
            continue
        for job in holders:
            if replay.jobs.queues[job] not in replay.guaranteed:
                continue
            key = replay.keys[job]
            namespace, name = key.split("/", 1)
            pods.append(Pod(key, namespace, name, names[node], 1, PodPhase.RUNNING, job=key))
            jobs.append(replay.runs[job].job)
    return reading, tuple(pods), tuple(jobs)
