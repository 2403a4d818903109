"""Scheduler model of the simulator: GPUs in milli-GPUs per device, tenant queues, backfill.

Capacity is a matrix `free[node, gpu]` of free milli-GPUs (a missing device is -1, so nothing
fits it). A whole-GPU job takes `num_gpu` completely free devices of one node; a GPU-sharing job
takes `milli` of a single device. Both place best-fit, as bin-packing schedulers do to keep whole
devices and whole nodes free for large jobs: a whole-GPU job goes to the node with the fewest
free devices that still fits it, a sharing job to the fullest device that fits it, and when it
must open an untouched device, to the node with the fewest untouched devices.

A node of the time-sliced pool (`replicas` >= 2, as the NVIDIA device plugin's time-slicing
config makes it, or a pool node started whole at 1 replica for the controller to raise)
advertises GPUs x replicas `nvidia.com/gpu`: a one-GPU pod (whole or sharing)
takes one replica, and multi-GPU pods never go there (a request for more than one replica gains
no compute: the plugin's `failRequestsGreaterThanOne`). One-GPU pods try the pool first (best-fit:
the node with the fewest free replicas), keeping whole devices elsewhere for the large pods. Which
GPU of the node a replica lands on is the plugin's `distributedAlloc` (NVIDIA/k8s-device-plugin,
internal/rm/allocate.go at 5f516c90): the GPU with the fewest replicas already allocated (ties
here: the lowest index, where the plugin's unstable sort leaves it open). A node whose replicas
are lowered below what its pods hold keeps them running and takes no new pod until they drain.
A pool node at 1 replica offers whole GPUs, as the device plugin then does, and the scheduler
treats it as any node that does not time-slice: one-GPU pods try only the raised pool nodes
first, then take a whole GPU best-fit among every node's (there, one replica, priced with any
pods a raise lets in); a multi-GPU pod may take the ones no pod holds (held as its replicas,
`Placement.pooled`), and the controller raises no such node while a pod holds several of its
GPUs (`plan.whole_pool`). A sharing pod (`gpu_milli` < 1000) packs onto the devices off the pool
first, then takes a whole GPU of a whole pool node: the milli-GPU packing is not replayed on a
pool node.

Queues are ordered the way Volcano's proportion plugin orders them: the queue with the lowest
allocated/deserved ratio first, so guaranteed queues go before the best-effort queue, whose
deserved share is zero. Within a queue jobs go first come, first served, and a job that does not
fit does not block smaller ones behind it (backfill), which is exactly how a large guaranteed job
can starve behind best-effort jobs that keep filling the gaps. A pass remembers the smallest
shape that failed, so a long queue costs one cheap check per job.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from reclaimer.simulate.trace import MILLI, BoolArray, IntArray, Jobs, Nodes


@dataclass(frozen=True)
class Placement:
    node: int
    devices: tuple[int, ...]
    milli: int  # 0 for a time-slice replica
    replica: bool = False  # one replica of a time-sliced GPU
    pooled: bool = False  # whole GPUs of a pool node at 1 replica (held as its replicas)


class Cluster:
    """Free milli-GPUs per device; mutated only by the simulator's event loop."""

    def __init__(
        self, nodes: Nodes, replicas: IntArray | None = None, pool: BoolArray | None = None
    ) -> None:
        width = int(nodes.gpus.max())
        self.free: IntArray = np.full((len(nodes.gpus), width), -1, dtype=np.int64)
        self.exists = np.zeros((len(nodes.gpus), width), dtype=bool)
        for i, count in enumerate(nodes.gpus):
            self.exists[i, : int(count)] = True
        self.replicas: IntArray = (
            np.ones(len(nodes.gpus), dtype=np.int64) if replicas is None else replicas.copy()
        )
        # the pool: fixed for a replay; by default the nodes that start time-sliced
        self.sliced = self.replicas >= 2 if pool is None else pool.copy()
        self.free[self.exists & ~self.sliced[:, None]] = MILLI
        self.holders: IntArray = np.zeros((len(nodes.gpus), width), dtype=np.int64)
        self.total_gpus = int(nodes.gpus.sum())

    def free_replicas(self) -> IntArray:
        """Per device, replicas a new pod could take now (0 off the pool or when lowered)."""
        room = np.where(self.exists & self.sliced[:, None], self.replicas[:, None], 0)
        result: IntArray = np.maximum(room - self.holders, 0)
        return result

    def _place_replica(self, nodes: BoolArray) -> Placement | None:
        """A replica on one of `nodes` (best fit: the node with the fewest free replicas)."""
        room = np.where(nodes[:, None], self.free_replicas(), 0)
        per_node = room.sum(axis=1)
        if not per_node.any():
            return None
        node = int(np.where(per_node > 0, per_node, np.iinfo(np.int64).max).argmin())
        held = np.where(room[node] > 0, self.holders[node], np.iinfo(np.int64).max)
        device = int(held.argmin())  # distributedAlloc: fewest replicas allocated
        self.holders[node, device] += 1
        return Placement(node, (device,), 0, replica=True)

    def whole_pool(self) -> IntArray:
        """Per node, the GPUs no pod holds on a pool node at 1 replica (0 elsewhere): whole
        GPUs, as on any node that does not time-slice."""
        whole = self.exists & self.sliced[:, None] & (self.replicas[:, None] == 1)
        result: IntArray = (whole & (self.holders == 0)).sum(axis=1)
        return result

    def _place_pooled(self, node: int, num_gpu: int) -> Placement:
        """GPUs of a whole pool node: one as a replica (priced with any pods a raise lets in),
        several whole (held as its replicas)."""
        unheld = self.exists[node] & (self.holders[node] == 0)
        devices = tuple(int(d) for d in np.flatnonzero(unheld)[:num_gpu])
        self.holders[node, list(devices)] += 1
        if num_gpu == 1:
            return Placement(node, devices, 0, replica=True)
        return Placement(node, devices, MILLI, pooled=True)

    def fits_anywhere_empty(self, num_gpu: int, milli: int) -> bool:
        """Could this shape run on some node of the empty cluster?"""
        if num_gpu == 1 and self.sliced.any():
            return True
        devices = (self.free >= 0).sum(axis=1)
        return bool((devices >= num_gpu).any()) if milli >= MILLI else bool(devices.any())

    def place(self, num_gpu: int, milli: int) -> Placement | None:
        raised = self.sliced & (self.replicas >= 2)
        if num_gpu == 1 and raised.any():
            spot = self._place_replica(raised)
            if spot is not None:
                return spot
        whole = (self.free == MILLI).sum(axis=1)
        if milli >= MILLI:
            return self._take_whole(num_gpu, whole + self.whole_pool())
        spot = self._pack(milli, whole)
        return spot if spot is not None else self._take_whole(1, self.whole_pool())

    def _pack(self, milli: int, whole: IntArray) -> Placement | None:
        """The fullest device off the pool that fits; among untouched devices, the node with
        the fewest of them."""
        score = self.free * (self.free.shape[1] + 1) + whole[:, None]
        masked = np.where(self.free >= milli, score, np.iinfo(np.int64).max)
        flat = int(masked.argmin())
        node, device = divmod(flat, self.free.shape[1])
        if self.free[node, device] < milli:
            return None
        self.free[node, device] -= milli
        return Placement(node, (device,), milli)

    def _take_whole(self, num_gpu: int, whole: IntArray) -> Placement | None:
        """`num_gpu` whole GPUs of one node, best fit (`whole`: the node's whole GPUs)."""
        candidates = np.where(whole >= num_gpu, whole, np.iinfo(np.int64).max)
        node = int(candidates.argmin())
        if whole[node] < num_gpu:
            return None
        if self.sliced[node]:
            return self._place_pooled(node, num_gpu)
        devices = tuple(int(d) for d in np.flatnonzero(self.free[node] == MILLI)[:num_gpu])
        self.free[node, list(devices)] = 0
        return Placement(node, devices, MILLI)

    def room(self) -> tuple[IntArray, IntArray]:
        """What a pod could take now, per device: free milli-GPUs and free replicas (copies)."""
        return self.free.copy(), self.free_replicas()

    def grew_since(self, room: tuple[IntArray, IntArray]) -> bool:
        """Has any device more free milli-GPUs or free replicas than in `room`? If not, no pod
        that found no place then can find one now: each fit needs room on some device."""
        free, replicas = room
        return bool((self.free > free).any() or (self.free_replicas() > replicas).any())

    def release(self, placement: Placement) -> None:
        if placement.replica or placement.pooled:
            self.holders[placement.node, list(placement.devices)] -= 1
            return
        self.free[placement.node, list(placement.devices)] += placement.milli

    def could_fit(self, released: list[Placement], shapes: set[tuple[int, int]]) -> bool:
        """Would a shape of `shapes` fit if `released` were freed? (Changes nothing.)

        A one-device shape needs its milli-GPUs on one device, a k-GPU shape k wholly free
        devices on one node.
        """
        free = self.free.copy()
        holders = self.holders.copy()
        for p in released:
            if p.replica or p.pooled:
                holders[p.node, list(p.devices)] -= 1
            else:
                free[p.node, list(p.devices)] += p.milli
        room = np.where(self.exists & self.sliced[:, None], self.replicas[:, None], 0) - holders
        replica = bool((room > 0).any())
        pooled = self.exists & self.sliced[:, None] & (self.replicas[:, None] == 1)
        whole = (free == MILLI).sum(axis=1) + (pooled & (holders == 0)).sum(axis=1)
        return any(
            replica or bool((free >= milli).any()) if num == 1 else bool((whole >= num).any())
            for num, milli in shapes
        )


class ShapeMemo:
    """Within one scheduling pass: the smallest shapes already known not to fit."""

    def __init__(self) -> None:
        self.whole_failed = 1 << 30
        self.milli_failed = 1 << 30

    def known_to_fail(self, num_gpu: int, milli: int) -> bool:
        if milli < MILLI:
            return milli >= self.milli_failed
        return num_gpu >= self.whole_failed

    def failed(self, num_gpu: int, milli: int) -> None:
        if milli < MILLI:
            self.milli_failed = min(self.milli_failed, milli)
        else:
            self.whole_failed = min(self.whole_failed, num_gpu)


class Queues:
    """Pending jobs per queue (arrival order) and GPUs allocated per queue."""

    def __init__(self, deserved: dict[str, float], jobs: Jobs) -> None:
        self.deserved = deserved
        self.pending: dict[str, list[int]] = {q: [] for q in deserved}
        self.allocated: dict[str, float] = dict.fromkeys(deserved, 0.0)
        self.gpus = jobs.gpus
        self.queue_of = jobs.queues
        self.shapes: list[tuple[int, int]] = list(
            zip(jobs.num_gpu.tolist(), jobs.milli.tolist(), strict=True)
        )
        self._fresh = dict.fromkeys(deserved, 0)  # per queue: jobs enqueued since the last pass
        self._after: tuple[Cluster, tuple[IntArray, IntArray]] | None = None  # its room then

    def order(self) -> list[str]:
        """Queues by allocated/deserved, lowest first (zero-deserved queues last)."""

        def share(queue: str) -> tuple[float, str]:
            deserved = self.deserved[queue]
            return (self.allocated[queue] / deserved if deserved > 0 else float("inf"), queue)

        return sorted(self.pending, key=share)

    def enqueue(self, job: int) -> None:
        self.pending[self.queue_of[job]].append(job)
        self._fresh[self.queue_of[job]] += 1

    def has_pending(self, queues: frozenset[str]) -> bool:
        return any(self.pending[q] for q in queues)

    def pending_shapes(self, queues: frozenset[str]) -> set[tuple[int, int]]:
        return {self.shapes[j] for q in queues for j in self.pending[q]}

    def schedule(self, cluster: Cluster) -> list[tuple[int, Placement]]:
        """Place whatever pending jobs fit now; returns the placements made, in order.

        When no device has gained room since the last pass (`Cluster.grew_since`), only the
        jobs enqueued since are tried, each queue's at the tail of its list: every job kept by
        that pass found no place (or had a shape the memo knew could not fit, which a try would
        confirm) and still finds none, so trying it again places nothing and changes nothing (a
        failed `place` leaves the cluster as it was). The new jobs meet the same queue order
        and the same room as in a full pass, so they are placed exactly as they would be there.
        """
        placed: list[tuple[int, Placement]] = []
        memo = ShapeMemo()
        last = self._after
        only_new = last is not None and last[0] is cluster and not cluster.grew_since(last[1])
        for queue in self.order():
            waiting = self.pending[queue]
            if not waiting:
                continue
            start = len(waiting) - self._fresh[queue] if only_new else 0
            kept: list[int] = waiting[:start]
            for job in waiting[start:]:
                num, milli = self.shapes[job]
                if memo.known_to_fail(num, milli):
                    kept.append(job)
                    continue
                spot = cluster.place(num, milli)
                if spot is None:
                    memo.failed(num, milli)
                    kept.append(job)
                    continue
                self.allocated[queue] += float(self.gpus[job])
                placed.append((job, spot))
            self.pending[queue] = kept
        self._fresh = dict.fromkeys(self.deserved, 0)
        self._after = (cluster, cluster.room())
        return placed
