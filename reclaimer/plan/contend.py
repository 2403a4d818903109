"""Contention on time-sliced GPUs: guaranteed pods that wait for a busy neighbour. Pure.

Time-slicing gives every process with work an equal slice of the GPU's time (GPU Operator
docs, "Time-Slicing GPUs in Kubernetes"), so a request of a guaranteed pod that arrives while a
neighbour on the same GPU is busy runs at a share of the GPU until the neighbour's work ends.
Its measure is the pod's *co-busy share*: of its busy time (utilization above 0), the part in
which another pod on its GPU was busy too. The exporter's per-pod utilization gives it per pod
over the last day (`Snapshot.contention`, read by the controller from Prometheus).

Two rules hold it under `timeSlicing.maxCobusyShare` (default 0.05; 1 turns them off):

- **Measured** (`GuaranteedPodsContend`): on a time-sliced node, the guaranteed pods there (of
  jobs in queues that are not reclaimable) were co-busy for more than that share of their busy
  time, over at least `MIN_BUSY_SECONDS` of it: the node goes one replica lower, down to 1, and
  its raises are held for `harmRaiseHold` (`harm.raise_hold`), as after crashes. The day read
  may include time before the node's last lowering; lowering again on it errs toward whole GPUs.
- **Predicted** (`NeighboursWouldContend`): a raise to R replicas gives a pod up to R - 1
  neighbours. The pods a raise lets in are new ones, so each is taken as busy the fleet's busy
  share `b` (busy over present time of every pod read, at least `MIN_PODS` pods), and a
  guaranteed pod's co-busy share at R as 1 - (1 - b)^(R - 1), the share if neighbours are busy
  independently of it. Pods of one service are loaded together, so the real share is higher
  (the shared trace: 0.50 measured against 0.28 at independent offsets, `bench/cobusy.py`);
  the prediction is a floor, and a raise it already refuses is surely one to refuse. A raise is
  held to the most replicas whose prediction stays within the limit, and refused below R + 1.
  Unknown (the reading failed, or too few pods) refuses a raise and lowers nothing: unknown is
  no reason to act.

A snapshot with no reading at all (`contention` None: a planner input built without one)
applies neither rule.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from reclaimer.decisions import Reason, Skip
from reclaimer.model import Contention, Job, Node, Pod, PodBusy, Queue
from reclaimer.policy.settings import TimeSlicing
from reclaimer.units import format_duration

MIN_BUSY_SECONDS = 3600.0  # a node's guaranteed pods' busy time the measured rule needs
MIN_PODS = 10  # pods read for the fleet's busy share (as the memory budget's peaks)


@dataclass(frozen=True)
class Contend:
    """The cycle's contention reading, and which pods are guaranteed, by node."""

    reading: Contention
    guaranteed: Mapping[str, tuple[str, ...]] = field(default_factory=dict)  # node -> pod keys
    fleet_busy: float | None = None  # `fleet_busy_share` of the reading (None: too few pods)

    def lowering(self, node: Node, ts: TimeSlicing) -> tuple[int, Reason, str] | None:
        """(replicas, reason, evidence) when the node's guaranteed pods contend past the limit."""
        if ts.max_cobusy_share >= 1.0 or node.replicas < 2 or self.reading.error:
            return None
        measured = self.measured(node)
        if measured is None or measured[0] <= ts.max_cobusy_share:
            return None
        share, busy = measured
        why = (
            f"guaranteed pods here were busy beside a busy neighbour {share:.0%} of their "
            f"{format_duration(busy)} busy over {format_duration(self.reading.window)} "
            f"(maxCobusyShare {ts.max_cobusy_share:.0%})"
        )
        return node.replicas - 1, Reason.PODS_CONTEND, why

    def gate(self, node: Node, target: int, ts: TimeSlicing) -> int | Skip:
        """A raise's target held to the most replicas the limit allows, or why none."""
        if ts.max_cobusy_share >= 1.0:
            return target
        r = node.replicas
        refused = f"would raise {r} -> {target}"
        if self.reading.error:
            return _skip(node, f"{refused}, but contention is unknown: {self.reading.error}")
        measured = self.measured(node)
        if r >= 2 and measured is not None and measured[0] > ts.max_cobusy_share:
            return _skip(node, f"{refused}; guaranteed pods here already contend {measured[0]:.0%}")
        busy = self.fleet_busy
        if busy is None:
            pods = len(self.reading.pods)
            return _skip(node, f"{refused}, but contention is unknown: {pods} pods read")
        allowed = [t for t in range(r + 1, target + 1) if predicted(busy, t) <= ts.max_cobusy_share]
        if allowed:
            return max(allowed)
        why = (
            f"{refused}: pods are busy {busy:.0%} of their time, so a guaranteed pod would wait "
            f"for a neighbour about {predicted(busy, r + 1):.0%} of its busy time at {r + 1} "
            f"(maxCobusyShare {ts.max_cobusy_share:.0%})"
        )
        return _skip(node, why)

    def measured(self, node: Node) -> tuple[float, float] | None:
        """(co-busy share, busy seconds) of the node's guaranteed pods, with enough busy time."""
        read = self.reading.pods
        rows = [read[k] for k in self.guaranteed.get(node.name, ()) if k in read]
        busy = sum(r.busy for r in rows)
        if busy < MIN_BUSY_SECONDS:
            return None
        return sum(r.cobusy for r in rows) / busy, busy


def contend(
    reading: Contention | None, pods: Iterable[Pod], jobs: Sequence[Job], queues: Sequence[Queue]
) -> Contend | None:
    """The cycle's `Contend`, or None when the snapshot carries no reading."""
    if reading is None:
        return None
    reclaimable = {q.name for q in queues if q.reclaimable}
    queue_of = {j.key: j.queue for j in jobs}
    guaranteed: dict[str, list[str]] = {}
    for p in pods:
        queue = queue_of.get(p.job or "")
        if p.node and queue is not None and queue not in reclaimable:
            guaranteed.setdefault(p.node, []).append(p.key)
    by_node = {n: tuple(keys) for n, keys in guaranteed.items()}
    return Contend(reading, by_node, fleet_busy_share(reading.pods.values()))


def fleet_busy_share(pods: Iterable[PodBusy]) -> float | None:
    """Busy over present time of every pod read, or None with fewer than `MIN_PODS`."""
    rows = [p for p in pods if p.present > 0]
    if len(rows) < MIN_PODS:
        return None
    return sum(p.busy for p in rows) / sum(p.present for p in rows)


def predicted(busy: float, replicas: int) -> float:
    """A pod's co-busy share beside `replicas - 1` neighbours each busy `busy`, independently."""
    return 1.0 - (1.0 - busy) ** max(replicas - 1, 0)


def _skip(node: Node, why: str) -> Skip:
    return Skip(node.name, Reason.WOULD_CONTEND, why)
