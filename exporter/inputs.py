"""The attribution inputs of one collect cycle: kubelet allocations, DRA devices, pods, cgroups.

`AttributionInputs.read` reads what per-pod attribution needs, in order: the kubelet's
allocations (`exporter.node.podresources`; without them nothing can be named, so the cycle serves
device metrics only), the DRA allocations' device UUIDs from the node's ResourceSlices
(`exporter.claims`), the node's pods from the API server, and each GPU process's cgroup (read
once per PID while NVML keeps listing it). Then it computes per-pod usage
(`attribution.attribute`, pure). An input that fails marks its collector failed in the cycle's
`Cycle` scratch (`gpu_exporter_collector_success{collector}` 0) and counts its call's error; the
first failure of an input is logged once as a warning (and the recovery of the allocations or
the ResourceSlices once as info), under the collect loop's logger (`exporter.cycle`).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from pathlib import Path

from exporter import claims
from exporter.attribution import attribute
from exporter.model import DeviceReading, PodUsage
from exporter.node.cgroup import parse_cgroup, read_cgroup
from exporter.node.podresources import AllocationSource, PodResourcesError
from exporter.node.pods import PodSource
from exporter.node.resourceslices import SliceSource
from exporter.sources import Allocation, CgroupRef, PodIndex

log = logging.getLogger("exporter.cycle")  # the collect loop's warnings, wherever they are made

PODRESOURCES = "podresources"
KUBERNETES = "kubernetes"
RESOURCESLICES = "resourceslices"
PROC = "proc"
CALL_PODRESOURCES = "podresources_list"
CALL_PODS = "kubernetes_list_pods"
CALL_SLICES = "kubernetes_list_resourceslices"
CALL_CGROUP = "proc_cgroup_read"


@dataclass(frozen=True)
class AttributionSources:
    """Where per-pod attribution reads from; the same for every backend."""

    allocations: AllocationSource
    pods: PodSource | None  # None: no API; fall back to single-holder devices
    proc_root: Path
    slices: SliceSource | None = None  # None: no API; DRA devices cannot be named


@dataclass
class Cycle:
    """Mutable scratch of one cycle (thread-local to the worker)."""

    success: dict[str, bool] = field(default_factory=dict)
    errors: dict[str, int] = field(default_factory=dict)

    def fail(self, collector: str | None, call: str, n: int = 1) -> None:
        if collector is not None:
            self.success[collector] = False
        self.errors[call] = self.errors.get(call, 0) + n


class AttributionInputs:
    """What reading the attribution inputs keeps from one cycle to the next: the inputs
    already warned about, and each process's pod (`_owners`)."""

    def __init__(self) -> None:
        self._degraded: set[str] = set()
        self._owner_cache: dict[int, CgroupRef | None] = {}

    def read(
        self, src: AttributionSources, devices: tuple[DeviceReading, ...], cycle: Cycle
    ) -> tuple[PodUsage, ...]:
        """Per-pod usage of `devices`, from the attribution inputs read this cycle."""
        allocations = self._allocations(src, cycle)
        if allocations is None:
            return ()  # without allocations nothing can be named: device metrics only
        allocations = self._resolve_claims(src, allocations, cycle)
        index = self._pod_index(src, cycle)
        owners = self._owners(src.proc_root, devices, cycle)
        known = {pid: ref for pid, ref in owners.items() if ref is not None}
        if src.pods is not None:
            src.pods.want(ref.pod_uid for ref in known.values())
        return attribute(devices, allocations, known, index)

    def _allocations(self, src: AttributionSources, cycle: Cycle) -> tuple[Allocation, ...] | None:
        try:
            allocations = src.allocations.list()
        except PodResourcesError as exc:
            self._warn_once(PODRESOURCES, f"no pod attribution, device metrics only: {exc}")
            cycle.fail(PODRESOURCES, CALL_PODRESOURCES)
            return None
        self._recovered(PODRESOURCES)
        cycle.success[PODRESOURCES] = True
        return allocations

    def _resolve_claims(
        self, src: AttributionSources, allocations: tuple[Allocation, ...], cycle: Cycle
    ) -> tuple[Allocation, ...]:
        """DRA allocations named by UUID (`exporter.claims`); the slices are read only on a
        node where the kubelet reports DRA devices, and fail their collector while a device
        stays unknown (its pod then has no series for it: unknown, not idle)."""
        keys = [a.claim.key for a in allocations if a.claim is not None]
        if not keys:
            return allocations
        uuids = None
        ok = src.slices is not None
        if src.slices is not None:
            src.slices.want(keys)
            lookup = src.slices.lookup()
            uuids, ok = lookup.uuids, lookup.ok
            if lookup.new_errors:
                cycle.fail(RESOURCESLICES, CALL_SLICES, lookup.new_errors)
        resolved = claims.resolve(allocations, uuids)
        cycle.success[RESOURCESLICES] = ok and not resolved.unknown
        if resolved.unknown and (src.slices is None or uuids is not None):  # not just unlisted yet
            where = "no API server" if src.slices is None else "not in the node's ResourceSlices"
            self._warn_once(
                RESOURCESLICES,
                f"{len(resolved.unknown)} DRA devices cannot be attributed ({where}), "
                f"e.g. {'/'.join(resolved.unknown[0])}",
            )
        elif not resolved.unknown:
            self._recovered(RESOURCESLICES)
        return resolved.allocations

    def _pod_index(self, src: AttributionSources, cycle: Cycle) -> PodIndex | None:
        if src.pods is None:
            return None
        lookup = src.pods.lookup()
        cycle.success[KUBERNETES] = lookup.ok
        if lookup.new_errors:
            cycle.fail(KUBERNETES, CALL_PODS, lookup.new_errors)
        return lookup.index

    def _owners(
        self, proc_root: Path, devices: tuple[DeviceReading, ...], cycle: Cycle
    ) -> dict[int, CgroupRef | None]:
        """Each process's pod, read from its cgroup the first cycle its PID shows up.

        A PID stays cached while NVML keeps listing it and is forgotten the first cycle it is
        absent, so a reused PID (which needs the old process gone first) is read afresh.
        """
        pids = {p.pid for d in devices for p in d.processes or ()}
        cache = {pid: ref for pid, ref in self._owner_cache.items() if pid in pids}
        cycle.success[PROC] = True
        for pid in pids - cache.keys():
            try:
                text = read_cgroup(proc_root, pid)
            except OSError as exc:
                self._warn_once(PROC, f"cannot read {proc_root}/{pid}/cgroup: {exc}")
                cycle.fail(PROC, CALL_CGROUP)
                continue
            if text is not None:  # a vanished process is not cached: it may be a race
                cache[pid] = parse_cgroup(text)
        self._owner_cache = cache
        return cache

    def _warn_once(self, what: str, message: str) -> None:
        if what not in self._degraded:
            self._degraded.add(what)
            log.warning("%s", message)

    def _recovered(self, what: str) -> None:
        if what in self._degraded:
            self._degraded.discard(what)
            log.info("%s is back", what)
