"""Failed container ends of GPU pods, from the pods' status: the evidence that pods sharing a GPU
do not fit it. Pure.

The kubelet reports each container's state in `status.containerStatuses[]` (k8s.io/api
core/v1 types.go, `ContainerStatus`: `state`, `lastState`, `restartCount`; a terminated state
is a `ContainerStateTerminated`: `exitCode`, `reason`, `finishedAt`). A container that ended and
was restarted keeps that end in `lastState.terminated`; one that ended and was not restarted
yet, or will not be, shows it in `state.terminated`. An end counts as a crash when its reason is
`OOMKilled` (the kernel's OOM killer, out of host memory) or its exit code is not 0: a process
whose CUDA allocation fails (out of GPU memory: time-slicing isolates none) raises an error and
exits with one, and the kubelet records that as `Error`, not `OOMKilled` (k8s-device-plugin
#323, a pod crash-looping on "CUDA out of memory" beside its neighbour).

Only GPU pods bound to a node count, and never one being deleted (a container killed on its
way out is not a crash). The controller lists pods that are neither Succeeded nor Failed, so a
Job's pod that failed for good (`restartPolicy: Never`) is not seen here; the memory-peak rule
(`plan.harm`) is what sees such pods.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any

from reclaimer.kube.objects import fields as f
from reclaimer.kube.objects.gangs import is_releasing
from reclaimer.model import ContainerCrash

OOM_KILLED = "OOMKilled"
ENDS = ("state", "lastState")  # the end now (not restarted yet), and the one before the restart


def of_pods(pods: Iterable[f.Obj], problems: list[str]) -> tuple[ContainerCrash, ...]:
    """Every pod's crashes, by node, pod, container and time; a pod whose status cannot be read
    adds a problem (its crashes are left out, the pod itself is not)."""
    out: list[ContainerCrash] = []
    for obj in pods:
        try:
            out += pod_crashes(obj)
        except (f.FieldError, AttributeError, TypeError) as exc:
            problems.append(f"Pod {f.key(obj)} status: skipped, {exc}")
    return tuple(sorted(out, key=lambda c: (c.node, c.pod, c.container, c.at)))


def pod_crashes(obj: f.Obj) -> list[ContainerCrash]:
    """Every crash of a bound GPU pod's containers that its status still shows; a malformed
    field raises `FieldError`."""
    node = f.dig(obj, "spec", "nodeName")
    if not node or is_releasing(obj) or f.pod_spec_slots(obj.get("spec")).total <= 0:
        return []
    out: list[ContainerCrash] = []
    statuses = f.dig(obj, "status", "containerStatuses")
    for status in statuses if isinstance(statuses, list) else []:
        if isinstance(status, dict):
            out += _ends(status, f.key(obj), str(node))
    return out


def _ends(status: dict[str, Any], pod: str, node: str) -> Iterator[ContainerCrash]:
    restarts = f.int_field(status.get("restartCount"), 0)
    for which in ENDS:
        ended = f.dig(status, which, "terminated")
        if not isinstance(ended, dict):
            continue
        reason = str(ended.get("reason") or "")
        code = f.int_field(ended.get("exitCode"), 0)
        at = f.timestamp(ended.get("finishedAt"))
        if at is None or (reason != OOM_KILLED and code == 0):
            continue
        yield ContainerCrash(pod, node, str(status.get("name", "")), at, reason, code, restarts)
