"""Whole GPUs handed back from the time-sliced pool to pending multi-GPU pods. Pure.

A time-sliced node offers replicas, and a pod asking for k > 1 GPUs gains nothing there: k
replicas may be k slices of one GPU (the device plugin's `failRequestsGreaterThanOne` exists to
refuse such requests), so such pods wait for whole GPUs. When one waits, the planner lowers a
pool node to 1 replica (reason `WholeGpusForPendingJob`) so that its GPUs are whole again, when:

- the pending job asks for pods of k >= 2 `nvidia.com/gpu` each (no MIG) and has waited
  `reclaimAfter` (room often frees itself within minutes);
- the nodes without time-slicing cannot hold its pods now (then it only waits for the
  scheduler), node by node, each rounded down to whole pods;
- handing back pool nodes makes them hold it: a pool node holds `free // k` of its pods, where
  `free` is its GPUs that no pod holds. The device plugin's `distributedAlloc` gives each new
  replica the GPU with the fewest allocated (NVIDIA/k8s-device-plugin
  internal/rm/allocate.go), so p one-replica pods on g GPUs hold min(p, g) of them. A lowering
  evicts no pod, so only GPUs already free are counted.

Pool nodes are taken fewest pods first (then by name), only as many as the job needs, each for
one job; jobs are served oldest first. Only nodes out of their cool-down are offered (the
caller filters them). A handed-back node stays at 1 replica: growing the pool again is left to
the operator.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from reclaimer.devices import count
from reclaimer.model import Node, PendingDemand, Pod, PodPhase
from reclaimer.units import format_duration

_BOUND = frozenset({PodPhase.RUNNING, PodPhase.PENDING})


@dataclass(frozen=True)
class Handback:
    """One pool node to lower to 1 replica, for one pending job."""

    node: str
    job: str
    queue: str
    detail: str


def handbacks(
    nodes: Sequence[Node],
    pods: Sequence[Pod],
    pending: Sequence[PendingDemand],
    *,
    now: float,
    wait: float,
) -> dict[str, Handback]:
    """Pool node name -> its handback (module doc)."""
    held = _held_slots(pods)
    whole = {n.name: n.gpus - held.get(n.name, 0) for n in nodes if n.replicas <= 1 and not n.mig}
    pool = [n for n in nodes if n.replicas >= 2 and not n.mig]
    pool.sort(key=lambda n: (held.get(n.name, 0), n.name))
    out: dict[str, Handback] = {}
    for d in sorted(pending, key=lambda d: (d.since, d.job)):
        per = _per_pod(d)
        if per < 2 or now - d.since < wait:
            continue
        need = _place(whole, per, d.min_member)
        if need == 0:
            continue  # whole GPUs hold it already: the scheduler's to place
        chosen = []
        for n in pool:
            free = n.gpus - min(n.gpus, held.get(n.name, 0))
            if n.name in out or free < per:
                continue
            chosen.append((n, free))
            need -= free // per
            if need <= 0:
                break
        if need > 0:
            continue  # the pool could not hold it either: lowering would gain nothing
        for n, free in chosen:
            out[n.name] = Handback(n.name, d.job, d.queue, _detail(n, free, d, per, now))
    return out


def _per_pod(d: PendingDemand) -> int:
    """GPUs each of the job's pods asks for (0 for MIG demand, which this does not serve)."""
    if d.mig or d.min_member <= 0:
        return 0
    return -(-d.gpus // d.min_member)


def _held_slots(pods: Sequence[Pod]) -> dict[str, int]:
    """`nvidia.com/gpu` slots held per node by bound pods (terminating ones still hold them)."""
    out: dict[str, int] = {}
    for p in pods:
        if p.node is not None and p.phase in _BOUND and not p.mig:
            out[p.node] = out.get(p.node, 0) + p.gpus
    return out


def _place(free: dict[str, int], per: int, pods: int) -> int:
    """Take room for up to `pods` pods of `per` GPUs from `free` (node by node, most room
    first); returns how many found none."""
    for name in sorted(free, key=lambda k: (-free[k], k)):
        take = min(pods, max(0, free[name]) // per)
        free[name] -= take * per
        pods -= take
        if pods == 0:
            break
    return pods


def _detail(node: Node, free: int, d: PendingDemand, per: int, now: float) -> str:
    waited = format_duration(max(0.0, now - d.since))
    return (
        f"{node.replicas} -> 1 replicas: whole GPUs for pending {d.job} (queue {d.queue}: "
        f"{count(d.min_member, 'pods')} of {per} GPUs, waiting {waited}); the nodes without "
        f"time-slicing cannot hold it; {free} of {count(node.gpus, 'GPUs')} here hold no pod "
        "(a lowering evicts none)"
    )
