"""The time-sliced GPUs of a replay: what sharing a GPU does to its pods, and their readings.

**The pool** is `sim_pool.members`'s: only `timeslice`, `timeslice-tuned` and `forecast` slice it
(at the replicas `sim_pool.tuned.start_replicas` gives); the other strategies replay every GPU
whole.

**Shares.** Whenever the pods of a time-sliced GPU change, and every `share_step_seconds` while
two or more share one, `reprice` settles each pod's progress at its old rate and gives it a new
one: the mean of `sim_sharing.contention.progress_rates` (under `SimSettings.contention`) over the
coming step, read sample by sample from every member's profile (at the positions its progress would
reach running alone: an approximation within one step). Its completion is rescheduled at that
rate. The same samples of the members' memory series (`sim_sharing.memory`, each within its bound on
that device, `sim_sharing.share_memory`) are checked against the device (`Replay.node_gib`: the node
list's measured `gpu_memory_mib` where it gives one, else `sim_sharing.contention.device_gib` of the
node's model): when they pass it, the pod that grows is OOM-killed now (`sim_pool.crashes`: its
container restarts in place after the kubelet's back-off) and the GPU is priced again without it. A
pod that has just begun making progress (started, or back from a restart and its model load)
counts as grown from nothing.

**Load for the reshape planner.** `pool_stats` gives each pool GPU what the controller reads from
Prometheus (`prometheus.history.node_stats_queries`): utilization averaged over the stats window
(the members' demand summed, at most 1, over the window's samples), memory used now (bytes, and
over the device's memory), and the GPU's id `node/gpuN`; `pool_readings` adds what the exporter's
per-pod series give (`prometheus.sharing.pod_gpu_queries`): each member's busy share, the share of
the GPU's time it got (its progress rate x its mean demand over the window), and the most memory
it held over the window.

**Co-busy time.** Each pricing also gives each pod the fraction of those samples at which it and
a neighbour are both busy (`sim_sharing.cobusy.cobusy_fractions`), kept for `ls_cobusy_share`.
"""

from __future__ import annotations

import heapq
import weakref
from dataclasses import dataclass

import numpy as np

from reclaimer.model import GpuStats
from reclaimer.simulate.jobs import COMPLETE, Replay
from reclaimer.simulate.pool.crashes import oom_kill
from reclaimer.simulate.sharing.cobusy import cobusy_fractions
from reclaimer.simulate.sharing.contention import oom_victim, progress_rates
from reclaimer.simulate.sharing.memory import GIB
from reclaimer.simulate.strategies import device_name
from reclaimer.simulate.trace import FloatArray

STATS_WINDOW_SECONDS = 600.0  # the controller's default `stats_window`


def shared_devices(replay: Replay) -> set[tuple[int, int]]:
    """Time-sliced GPUs that two or more jobs hold now."""
    return {d for d, jobs in replay.on_device.items() if len(jobs) >= 2}


def _limit(replay: Replay, device: tuple[int, int]) -> float:
    """GiB of the device: as the node list measured it, else by its node's model (every GPU of
    a node is the same model)."""
    return replay.node_gib(device[0])


def _samples(replay: Replay, span: float) -> FloatArray:
    step = replay.usage.step
    result: FloatArray = np.arange(max(1, int(np.ceil(span / step))), dtype=np.float64) * step
    return result


def _slots(groups: list[list[int]], width: int) -> list[int]:
    """Where each job's row goes in `_padded`'s devices x width rows (groups back to back)."""
    return [i * width + r for i, g in enumerate(groups) for r in range(len(g))]


def _padded(slots: list[int], values: FloatArray, devices: int, width: int) -> FloatArray:
    """Per-job rows (jobs x samples, in `_slots` order) as devices x width x samples."""
    out = np.zeros((devices * width, values.shape[1]))
    out[slots] = values
    result: FloatArray = out.reshape(devices, width, values.shape[1])
    return result


def reprice(replay: Replay, devices: set[tuple[int, int]], now: float) -> None:
    """Settle and re-rate every job on `devices`; OOM-kill where memory runs out.

    A job alone on its GPU gets rate 1 and is never OOM-killed (`oom_victim` needs two pods), so
    it is settled at once, its samples unread: the GPU an OOM kill leaves with one pod is priced
    again so, once per kill. The other GPUs' numbers are exactly what they were with it in the
    batch: each GPU is a column of its own in `_oom_kills` and `progress_rates`, and the padded
    width is set by the GPUs two or more jobs share.
    """
    todo = set(devices)
    k = _samples(replay, replay.settings.share_step_seconds)
    usage = replay.usage
    while todo:
        batch = []
        for d in sorted(todo):
            held = replay.on_device.get(d)
            if held and len(held) == 1:
                _price(replay, held[0], 1.0, 0.0, now)
            elif held:
                batch.append(d)
        if not batch:
            return
        groups = [list(replay.on_device[d]) for d in batch]
        width = max(len(g) for g in groups)
        slots = _slots(groups, width)
        members = [replay.runs[j] for g in groups for j in g]
        jobs = np.array([j for g in groups for j in g], dtype=np.int64)
        progress = np.array([run.progress(now) for run in members])
        index = np.repeat(jobs, len(k))
        at = (progress[:, None] + k[None, :]).reshape(-1)
        where = usage.position(index, at)  # `Usage.memory_gib` and `utilization` read these
        held_gib = np.zeros(len(index)) if usage.memory is None else usage.memory[where]
        bound = usage.memory_bound(
            jobs, _gib_of(replay, batch, groups)
        )  # `sim_sharing.share_memory`
        within = np.minimum(held_gib.reshape(len(jobs), -1), bound[:, None])
        memory = _padded(slots, within, len(batch), width)
        fresh = np.array([run.warm_at == now for run in members])
        earlier = np.minimum(usage.memory_gib(jobs, np.maximum(progress - usage.step, 0.0)), bound)
        before = _padded(slots, np.where(fresh, 0.0, earlier)[:, None], len(batch), width)
        todo = _oom_kills(
            replay, batch=batch, groups=groups, memory=memory, before=before[:, :, 0], now=now
        )
        demand = _padded(slots, usage.values[where].reshape(len(jobs), -1), len(batch), width)
        pods_first = demand.transpose(1, 0, 2).reshape(width, -1)
        rates = progress_rates(
            pods_first, replay.settings.switch_overhead, replay.settings.contention
        )
        mean = rates.reshape(width, len(batch), len(k)).mean(axis=2).T
        together = cobusy_fractions(demand)
        for i, device in enumerate(batch):
            if device in todo:  # a pod was OOM-killed: priced again without it
                continue
            for r, j in enumerate(groups[i]):
                _price(replay, j, float(mean[i, r]), float(together[i, r]), now)


def _gib_of(replay: Replay, devices: list[tuple[int, int]], groups: list[list[int]]) -> FloatArray:
    """GiB of the device each job of `groups` (one group per device) runs on, job by job."""
    return np.array([_limit(replay, d) for d, g in zip(devices, groups, strict=True) for _ in g])


def _oom_kills(
    replay: Replay,
    *,
    batch: list[tuple[int, int]],
    groups: list[list[int]],
    memory: FloatArray,
    before: FloatArray,
    now: float,
) -> set[tuple[int, int]]:
    """Kill one pod on each device whose memory runs out; returns those devices."""
    limits = np.array([_limit(replay, d) for d in batch])
    killed: set[tuple[int, int]] = set()
    for i in np.flatnonzero((memory.sum(axis=1) > limits[:, None]).any(axis=1)).tolist():
        n = len(groups[i])
        victim = oom_victim(memory[i, :n], before[i, :n], float(limits[i]))
        if victim is not None:
            replay.crashes.append((now, batch[i][0], groups[i][victim]))  # the planner's evidence
            oom_kill(replay, groups[i][victim], now)
            killed.add(batch[i])
    return killed


def _price(replay: Replay, job: int, rate: float, cobusy: float, now: float) -> None:
    """The job's new rate, and the share of its coming samples a neighbour is busy with it."""
    _set_rate(replay, job, rate, now)
    replay.cobusy.priced(job, replay.runs[job].progress(now), cobusy)


def _set_rate(replay: Replay, job: int, rate: float, now: float) -> None:
    run = replay.runs[job]
    run.lag += (1.0 - run.rate) * (now - run.since)
    run.since = now
    rate = max(rate, 1e-6)
    if rate == run.rate:
        return
    run.rate = rate
    left = float(replay.jobs.runtime[job]) - run.progress(now)
    replay.epoch[job] += 1
    heapq.heappush(replay.heap, (now + max(left, 0.0) / rate, COMPLETE, job, replay.epoch[job]))


@dataclass(frozen=True)
class PodReading:
    """One job's use of its time-sliced GPU over the stats window, as the exporter reads it."""

    job: int
    node: int
    device: int
    busy: float  # the share of the GPU's time it got: its progress rate x its mean demand
    memory_bytes: float  # the most device memory it held over the window


@dataclass(frozen=True)
class PoolReadings:
    stats: dict[int, tuple[GpuStats, ...]]  # pool node -> each of its GPUs
    pods: tuple[PodReading, ...]


def pool_stats(replay: Replay, now: float) -> dict[int, tuple[GpuStats, ...]]:
    """Each GPU of each pool node as the controller reads it from Prometheus (module doc)."""
    return pool_readings(replay, now).stats


@dataclass(frozen=True)
class _PoolLayout:
    """What `pool_readings` reads of a replay that stays the same all through it: the pool's
    GPUs (the pool and each node's GPU count are fixed for a replay), their memory in GiB (the
    node's model) and their ids. Built once per replay instead of once per cycle."""

    devices: tuple[tuple[int, int], ...]  # (node, device), node by node
    limits: FloatArray  # GiB of each
    uuids: tuple[str, ...]  # `gpu_uuid` of each


_LAYOUTS: weakref.WeakKeyDictionary[Replay, _PoolLayout] = weakref.WeakKeyDictionary()


def _layout(replay: Replay) -> _PoolLayout:
    found = _LAYOUTS.get(replay)
    if found is None:
        names = replay.nodes.names
        devices = tuple(
            (i, d)
            for i in np.flatnonzero(replay.cluster.sliced).tolist()
            for d in range(int(replay.nodes.gpus[i]))
        )
        limits = np.array([_limit(replay, dev) for dev in devices])
        found = _PoolLayout(devices, limits, tuple(gpu_uuid(names[i], d) for i, d in devices))
        _LAYOUTS[replay] = found
    return found


def pool_readings(replay: Replay, now: float) -> PoolReadings:
    """The pool's GPUs and the jobs on them, as the controller reads them (module doc)."""
    back = _samples(replay, STATS_WINDOW_SECONDS)[::-1]
    layout = _layout(replay)
    devices, limits = layout.devices, layout.limits
    groups = [replay.on_device.get(dev, []) for dev in devices]
    width = max((len(g) for g in groups), default=0)
    util = np.zeros(len(devices))
    memory = np.zeros(len(devices))
    pods: list[PodReading] = []
    if width:
        members = [replay.runs[j] for g in groups for j in g]
        jobs = np.array([j for g in groups for j in g], dtype=np.int64)
        progress = np.array([run.progress(now) for run in members])
        at = np.maximum(progress[:, None] - back[None, :], 0.0).reshape(-1)
        index = np.repeat(jobs, len(back))
        each = replay.usage.utilization(index, at).reshape(len(jobs), -1)
        bound = replay.usage.memory_bound(jobs, _gib_of(replay, list(devices), groups))
        held = np.minimum(replay.usage.memory_gib(index, at).reshape(len(jobs), -1), bound[:, None])
        slots = _slots(groups, width)
        demand = _padded(slots, each, len(devices), width)
        used = _padded(slots, held, len(devices), width)
        util = np.minimum(demand.sum(axis=1), 1.0).mean(axis=1)
        memory = np.minimum(used[:, :, -1].sum(axis=1), limits)
        rates = np.array([run.rate for run in members])
        busy = np.minimum(rates * each.mean(axis=1), 1.0)
        peak = held.max(axis=1) * GIB
        where = [dev for dev, g in zip(devices, groups, strict=True) for _ in g]
        pods = [
            PodReading(j, node, d, b, m)
            for j, (node, d), b, m in zip(
                jobs.tolist(), where, busy.tolist(), peak.tolist(), strict=True
            )
        ]
    out: dict[int, list[GpuStats]] = {}
    for (node, _), uuid, u, m, total in zip(
        devices, layout.uuids, util.tolist(), memory.tolist(), limits.tolist(), strict=True
    ):
        stats = GpuStats(
            utilization=u,
            memory_used_ratio=m / total,
            uuid=uuid,
            memory_used_bytes=m * GIB,
            memory_total_bytes=total * GIB,
        )
        out.setdefault(node, []).append(stats)
    return PoolReadings({node: tuple(s) for node, s in out.items()}, tuple(pods))


def gpu_uuid(node: str, device: int) -> str:
    """The physical GPU's id in the replay (`GpuStats.uuid`, `PodGpuUsage.gpu`): `node/gpuN`."""
    return device_name(node, device)
