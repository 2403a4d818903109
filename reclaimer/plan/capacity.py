"""GPU accounting for one planning cycle: where jobs sit, what is free, what queues deserve.

Capacity is counted in schedulable GPU slots, the unit pods request, per device resource
(`reclaimer.devices`): a node offers `gpus * replicas` slots of `nvidia.com/gpu` (time-slicing
multiplies what the scheduler sees); a MIG-enabled node offers what it advertises per resource
(each `nvidia.com/mig-<profile>`, and `nvidia.com/gpu` beside them), and a slot of one resource
never holds a pod asking for another. A pod occupies slots on
its node from the moment it is bound (Running, or Pending with a node) until it is gone. A queue's
allocation is the slots its jobs' bound pods hold (what it deserves is `reclaimer.plan.shares`).

Room in flight: a bound pod on its way out (its job is suspended or aborted, by anyone; or the pod
has a deletionTimestamp or a DisruptionTarget condition) still holds its devices until the kubelet
confirms it is gone, possibly minutes for a checkpointing job. Its slots are *releasing*: not free
now, but free soon, and never worth a second preemption. The planner counts them as future free
(Volcano's FutureIdle = idle + releasing), and they belong to no job's placement, so a stopping
job is never a victim again.
A DRA claim no pod reserves any more is releasing too, on its node (the resourceclaim controller
deallocates it); one that several pods share holds its devices until the last of them is gone,
so no stop counts it as room (`reclaimer.kube.objects.dra`).

Fit is checked per node and resource: a gang of `n` equal pods of `p` slots fits when the nodes'
free slots, each rounded down to whole pods (`free // p`), add up to at least `n`. That is exact for
equal-size pods, which is what PodGroups of PyTorchJobs and Volcano Jobs are.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType

from reclaimer.devices import WHOLE_GPU, slots_by_resource
from reclaimer.model import Job, Node, Pod, PodPhase, Snapshot
from reclaimer.policy.settings import VOLCANO_PREEMPTABLE, Policy

_BOUND = frozenset({PodPhase.RUNNING, PodPhase.PENDING})


ByNode = Mapping[str, int]


@dataclass(frozen=True)
class Placement:
    """Where one job's bound pods sit: slots (all resources) and pod counts per node, and the
    slots per device resource per node (`slots`)."""

    gpus_by_node: ByNode = field(default_factory=lambda: MappingProxyType({}))
    pods_by_node: ByNode = field(default_factory=lambda: MappingProxyType({}))
    opted_out: bool = False  # some pod carries an opt-out annotation
    slots: Mapping[str, ByNode] = field(default_factory=lambda: MappingProxyType({}))

    @property
    def gpus(self) -> int:
        return sum(self.gpus_by_node.values())

    @property
    def resources(self) -> Mapping[str, ByNode]:
        """Slots per resource per node (all whole GPUs when `slots` was not given)."""
        return self.slots or {WHOLE_GPU: self.gpus_by_node}

    def on(self, resource: str) -> ByNode:
        return self.resources.get(resource, {})


def node_capacity(node: Node) -> dict[str, int]:
    """Slots per device resource: what a MIG-enabled node advertises, else GPUs x replicas."""
    offered = dict(node.mig) if node.mig else {WHOLE_GPU: node.gpus * max(1, node.replicas)}
    return {r: n for r, n in offered.items() if n > 0}


def node_slots(node: Node) -> int:
    return sum(node_capacity(node).values())


def pod_slots(pod: Pod) -> dict[str, int]:
    return slots_by_resource(pod.gpus, pod.mig)


def _add(into: dict[str, dict[str, int]], outer: str, inner: str, n: int) -> None:
    mine = into.setdefault(outer, {})
    mine[inner] = mine.get(inner, 0) + n


def _frozen(nested: Mapping[str, Mapping[str, int]]) -> Mapping[str, ByNode]:
    frozen = {k: MappingProxyType(dict(sorted(v.items()))) for k, v in nested.items()}
    return MappingProxyType(frozen)


def is_opted_out(annotations: Mapping[str, str], policy: Policy) -> bool:
    """True when Volcano's or the policy's preemptable annotation says "false"."""
    keys = (VOLCANO_PREEMPTABLE, policy.opt_out_annotation)
    return any(annotations.get(k, "").strip().lower() == "false" for k in keys)


def _owners(snapshot: Snapshot) -> dict[str, str]:
    return {pod_key: job.key for job in snapshot.jobs for pod_key in job.pods}


def placements(snapshot: Snapshot, policy: Policy) -> dict[str, Placement]:
    """Job key -> its bound pods' placement (pods found by `Pod.job` or listed in `Job.pods`).

    Releasing pods (see `releasing`) are no job's: their slots are already on their way out.
    """
    owner = _owners(snapshot)
    stopping = {j.key for j in snapshot.jobs if j.suspended}
    gpus: dict[str, dict[str, int]] = {}
    pods: dict[str, dict[str, int]] = {}
    slots: dict[str, dict[str, dict[str, int]]] = {}
    opted: set[str] = set()
    for pod in snapshot.pods:
        job = pod.job or owner.get(pod.key)
        if job is None or pod.node is None or pod.phase not in _BOUND:
            continue
        if pod.releasing or job in stopping:
            continue
        _add(gpus, job, pod.node, pod.gpus)
        _add(pods, job, pod.node, 1)
        for resource, n in pod_slots(pod).items():
            _add(slots.setdefault(job, {}), resource, pod.node, n)
        if is_opted_out(pod.annotations, policy):
            opted.add(job)
    return {
        job: Placement(
            MappingProxyType(dict(sorted(gpus[job].items()))),
            MappingProxyType(dict(sorted(pods[job].items()))),
            job in opted,
            _frozen(slots.get(job, {})),
        )
        for job in sorted(gpus)
    }


@dataclass(frozen=True)
class Releasing:
    """Slots held by bound pods on their way out: per node, per job (pods without a job count on
    their node only), and per device resource per node."""

    by_node: ByNode
    by_job: Mapping[str, ByNode]
    by_resource: Mapping[str, ByNode] = field(default_factory=lambda: MappingProxyType({}))


def releasing(snapshot: Snapshot) -> Releasing:
    """Slots of bound pods whose job is suspended/aborted or that are being deleted/evicted."""
    owner = _owners(snapshot)
    stopping = {j.key for j in snapshot.jobs if j.suspended}
    by_node: dict[str, int] = {}
    by_job: dict[str, dict[str, int]] = {}
    by_resource: dict[str, dict[str, int]] = {}
    for pod in snapshot.pods:
        if pod.node is None or pod.phase not in _BOUND or pod.gpus <= 0:
            continue
        job = pod.job or owner.get(pod.key)
        if not (pod.releasing or job in stopping):
            continue
        by_node[pod.node] = by_node.get(pod.node, 0) + pod.gpus
        for resource, n in pod_slots(pod).items():
            _add(by_resource, resource, pod.node, n)
        if job is not None:
            _add(by_job, job, pod.node, pod.gpus)
    for node in snapshot.nodes:  # DRA claims no pod reserves: the control plane frees them
        for resource, n in node.claims_releasing.items():
            by_node[node.name] = by_node.get(node.name, 0) + n
            _add(by_resource, resource, node.name, n)
    return Releasing(MappingProxyType(by_node), _frozen(by_job), _frozen(by_resource))


def free_slots(snapshot: Snapshot) -> dict[str, dict[str, int]]:
    """Device resource -> node name -> slots not held by any bound pod, nor by a DRA claim.

    Negative when pods hold more than the node offers (replicas were just lowered under them):
    freeing such a node's pods first pays back the overdraft.
    """
    free: dict[str, dict[str, int]] = {}
    for n in snapshot.nodes:
        for resource, slots in node_capacity(n).items():
            free.setdefault(resource, {})[n.name] = slots
        for taken in (n.claims_held, n.claims_releasing):  # DRA claims held by no one pod
            for resource, slots in taken.items():
                _add(free, resource, n.name, -slots)
    known = {n.name for n in snapshot.nodes}
    for pod in snapshot.pods:
        if pod.node is not None and pod.node in known and pod.phase in _BOUND:
            for resource, slots in pod_slots(pod).items():
                _add(free, resource, pod.node, -slots)
    return free


def queue_allocation(jobs: Iterable[Job], where: Mapping[str, Placement]) -> dict[str, float]:
    """Queue name -> slots held by its jobs' bound pods."""
    out: dict[str, float] = {}
    for job in jobs:
        placed = where.get(job.key)
        if placed is not None and not job.suspended:
            out[job.queue] = out.get(job.queue, 0.0) + placed.gpus
    return out


def pod_shape(gpus: int, pods: int) -> tuple[int, int]:
    """(slots per pod, pod count) for a gang of `gpus` slots over `pods` equal pods; a pod takes
    at least one slot, so that fit checks never divide by zero."""
    count = max(1, pods)
    return max(1, -(-gpus // count)), count


class FreeSlots:
    """Free slots per node, indexed by value, so fit checks cost O(distinct values), not O(nodes).

    The planner asks "how many pods of p slots fit?" for every pending job; with 1,000 nodes and
    thousands of pending jobs a scan per question would dominate the cycle.
    """

    def __init__(self, free: Mapping[str, int]) -> None:
        self._free: dict[str, int] = {}
        self._by_value: dict[int, set[str]] = {}
        for node, slots in free.items():
            self._free[node] = slots
            self._by_value.setdefault(slots, set()).add(node)

    def get(self, node: str) -> int:
        return self._free.get(node, 0)

    def add(self, node: str, delta: int) -> None:
        old = self._free.get(node, 0)
        if node in self._free:
            self._by_value[old].discard(node)
        self._free[node] = old + delta
        self._by_value.setdefault(old + delta, set()).add(node)

    def fit_count(self, pod_gpus: int, extra: Mapping[str, int] | None = None) -> int:
        """Pods of `pod_gpus` slots that fit, node by node (with `extra` slots added per node)."""
        count = sum(len(nodes) * (v // pod_gpus) for v, nodes in self._by_value.items() if v > 0)
        for node, more in (extra or {}).items():
            before = self.get(node)
            count += max(0, before + more) // pod_gpus - max(0, before) // pod_gpus
        return count

    def reserve(self, pod_gpus: int, count: int) -> dict[str, int]:
        """Take `count` pods best-fit (fullest node that still fits first); slots taken per node.

        The caller has checked that they fit.
        """
        order = sorted(
            (v, n) for v, nodes in self._by_value.items() if v >= pod_gpus for n in nodes
        )
        taken: dict[str, int] = {}
        for value, node in order:
            pods = min(count, value // pod_gpus)
            if pods:
                self.add(node, -pods * pod_gpus)
                taken[node] = pods * pod_gpus
                count -= pods
            if count == 0:
                break
        return taken


class FreePool:
    """Free slots per device resource, each a `FreeSlots` over the nodes."""

    def __init__(self, free: Mapping[str, Mapping[str, int]]) -> None:
        self._by: dict[str, FreeSlots] = {r: FreeSlots(f) for r, f in free.items()}

    def of(self, resource: str) -> FreeSlots:
        """The free slots of `resource` (none anywhere when no node offers it)."""
        return self._by.setdefault(resource, FreeSlots({}))


def total_slots(nodes: Iterable[Node]) -> int:
    return sum(node_slots(n) for n in nodes)
