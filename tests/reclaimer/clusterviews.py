"""Small ClusterViews built from the model types, for the controller and history tests."""

from __future__ import annotations

from reclaimer.model import ClusterView, Job, JobKind, Node, PendingDemand, Pod, PodPhase, Queue


def job_with_pods(ns: str, name: str, queue: str, pods: list[tuple[str, int]], node: str = "n1"):
    key = f"{ns}/{name}"
    pod_objs = [
        Pod(f"{ns}/{p}", ns, p, node, gpus, PodPhase.RUNNING, job=key, start_time=0.0)
        for p, gpus in pods
    ]
    job = Job(
        key,
        JobKind.VOLCANO_JOB,
        ns,
        name,
        queue,
        sum(g for _, g in pods),
        min_member=len(pods),
        pods=tuple(p.key for p in pod_objs),
    )
    return job, pod_objs


def view(
    jobs: list[tuple[Job, list[Pod]]],
    taken_at: float = 0.0,
    pending: tuple[PendingDemand, ...] = (),
    queues: tuple[Queue, ...] = (),
) -> ClusterView:
    return ClusterView(
        taken_at=taken_at,
        queues=queues,
        jobs=tuple(j for j, _ in jobs),
        pods=tuple(p for _, ps in jobs for p in ps),
        nodes=(Node("n1", 8),),
        pending=pending,
    )
