"""gpu_check's numbers: do the exporter's readings agree with each other under a known load?

The load (scripts/gpu_check_load.py) runs in two phases on one GPU: "one" with a single busy
process, "two" with a second one added, which time-slices the GPU with the first. Each phase's
first cycle straddles the change and is left out; the rest are averaged. Pure functions of the
collect loop's snapshots:
- one_busy: the busiest process's SM activity is the GPU's DCGM_FI_DEV_GPU_UTIL within 15 points
  (the per-process reading NVML's real semantics broke: a busy process read 20%).
- two_loads: two processes above 10% each, adding up to GPU_UTIL within 15 points.
- gpm: DCGM_FI_PROF_GR_ENGINE_ACTIVE is GPU_UTIL within 15 points under load (SKIP without GPM).
- energy: the energy counter's change over a phase is the mean power times the time between the
  two counter reads, within 15%. That time is measured around the reads themselves
  (`gpu_check_timed`), not taken from the cycles' schedule or their snapshot times: on a busy
  machine a read can come late in its cycle, or its cycle late.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

from gpu_check_env import Check
from gpu_check_timed import ReadTime

from exporter.model import DeviceReading, NodeSnapshot
from exporter.nvml.readings import GPU_UTIL, family

POINTS = 15.0
ENERGY_TOLERANCE = 0.15
MIN_LOAD_UTIL = 50.0  # below this the load is not running on that GPU
GR_ACTIVE = family("DCGM_FI_PROF_GR_ENGINE_ACTIVE")
POWER = family("DCGM_FI_DEV_POWER_USAGE")
ENERGY = family("DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION")


def _device(snap: NodeSnapshot, uuid: str) -> DeviceReading | None:
    return next((d for d in snap.devices if d.uuid == uuid and d.mig is None), None)


def _mean(values: Sequence[float]) -> float | None:
    return sum(values) / len(values) if values else None


def _steady(snaps: Sequence[NodeSnapshot], uuid: str) -> list[DeviceReading]:
    """The load GPU's readings in a phase, its first (transition) cycle left out."""
    return [d for s in snaps[1:] for d in (_device(s, uuid),) if d is not None]


def load_gpu(snaps: Sequence[NodeSnapshot], uuid: str | None) -> str | None:
    """The GPU the load ran on: the one the load named, else the busiest whole GPU."""
    if uuid:
        return uuid
    utils: dict[str, list[float]] = {}
    for s in snaps[1:]:
        for d in s.devices:
            if d.mig is None and GPU_UTIL in d.values:
                utils.setdefault(d.uuid, []).append(d.values[GPU_UTIL])
    means = {u: sum(v) / len(v) for u, v in utils.items()}
    return max(means, key=lambda u: means[u]) if means else None


def _util(devices: Sequence[DeviceReading]) -> float | None:
    return _mean([d.values[GPU_UTIL] for d in devices if GPU_UTIL in d.values])


def _busiest(devices: Sequence[DeviceReading], n: int) -> list[float] | None:
    """Per cycle the n busiest processes' SM activity in percent, averaged over the cycles;
    None when some cycle has fewer than n processes with a known reading."""
    per_cycle = []
    for d in devices:
        known = sorted(
            (p.sm_util * 100 for p in d.processes or () if not math.isnan(p.sm_util)), reverse=True
        )
        if len(known) < n:
            return None
        per_cycle.append(known[:n])
    if not per_cycle:
        return None
    return [sum(c[i] for c in per_cycle) / len(per_cycle) for i in range(n)]


def check_one_busy(snaps: Sequence[NodeSnapshot], uuid: str) -> Check:
    devices = _steady(snaps, uuid)
    util, busiest = _util(devices), _busiest(devices, 1)
    if util is None or util < MIN_LOAD_UTIL:
        return Check("one_busy_process", False, f"{uuid}: GPU_UTIL {util} under load")
    if busiest is None:
        return Check("one_busy_process", False, f"{uuid}: no process with a reading")
    ok = abs(busiest[0] - util) <= POINTS
    detail = (
        f"{uuid}: busiest process {busiest[0]:.1f}% vs GPU_UTIL {util:.1f}% ({len(devices)} cycles)"
    )
    return Check("one_busy_process", ok, detail)


def check_two_loads(snaps: Sequence[NodeSnapshot], uuid: str) -> Check:
    devices = _steady(snaps, uuid)
    util, two = _util(devices), _busiest(devices, 2)
    if util is None or util < MIN_LOAD_UTIL:
        return Check("two_loads", False, f"{uuid}: GPU_UTIL {util} under load")
    if two is None:
        return Check("two_loads", False, f"{uuid}: fewer than two processes with a reading")
    ok = min(two) > 10.0 and abs(sum(two) - util) <= POINTS
    detail = f"{uuid}: processes {two[0]:.1f}% + {two[1]:.1f}% vs GPU_UTIL {util:.1f}%"
    return Check("two_loads", ok, detail)


def check_gpm(snaps: Sequence[NodeSnapshot], uuid: str) -> Check:
    devices = [d for d in _steady(snaps, uuid) if GR_ACTIVE in d.values and GPU_UTIL in d.values]
    if not devices:
        return Check("gpm_vs_gpu_util", None, f"{uuid}: no GPM reading (GPM needs Hopper+, R525+)")
    gr = _mean([d.values[GR_ACTIVE] * 100 for d in devices]) or 0.0
    util = _util(devices) or 0.0
    ok = util >= MIN_LOAD_UTIL and abs(gr - util) <= POINTS
    return Check(
        "gpm_vs_gpu_util", ok, f"{uuid}: GR_ENGINE_ACTIVE {gr:.1f}% vs GPU_UTIL {util:.1f}%"
    )


def check_energy(
    snaps: Sequence[NodeSnapshot], uuid: str, reads: Sequence[Mapping[str, ReadTime]]
) -> Check:
    """Over the phase's steady cycles: the counter from the first to the last, the power read by
    the ones after the first (each a reading of the span it ends). `reads[i]` says when cycle i
    read each GPU's counter: the time between the two reads lies between the later one's start
    less the earlier one's end and the later one's end less the earlier one's start, and the
    counter's change must be the mean power times some time in that span, within 15%."""
    steady = list(zip(snaps[1:], reads[1:], strict=True))
    if len(steady) < 2:
        return Check("energy_vs_power", False, f"{uuid}: {len(steady)} steady cycle(s), need 2")
    ends = [(r.get(uuid), d) for s, r in (steady[0], steady[-1]) for d in (_device(s, uuid),) if d]
    powers = [d.values[POWER] for d in _steady(snaps[1:], uuid) if POWER in d.values]
    if len(ends) < 2 or not powers or any(ENERGY not in d.values for _, d in ends):
        return Check("energy_vs_power", None, f"{uuid}: no energy counter or power reading")
    (r0, d0), (r1, d1) = ends
    if r0 is None or r1 is None:
        return Check("energy_vs_power", False, f"{uuid}: the counter reads were not timed")
    joules = (d1.values[ENERGY] - d0.values[ENERGY]) / 1000.0
    watts = sum(powers) / len(powers)
    shortest, longest = r1.before - r0.after, r1.after - r0.before
    low, high = watts * shortest, watts * longest
    ok = high > 0 and (1 - ENERGY_TOLERANCE) * low <= joules <= (1 + ENERGY_TOLERANCE) * high
    detail = (
        f"{uuid}: {joules:.0f} J counted vs {low:.0f}-{high:.0f} J = mean power {watts:.0f} W"
        f" x {shortest:.3f}-{longest:.3f} s between the counter reads"
    )
    return Check("energy_vs_power", ok, detail)


def quantitative_checks(
    one: Sequence[NodeSnapshot],
    two: Sequence[NodeSnapshot],
    named_uuid: str | None,
    one_reads: Sequence[Mapping[str, ReadTime]],
) -> list[Check]:
    uuid = load_gpu(one, named_uuid)
    if uuid is None or len(one) < 2 or len(two) < 2:
        reason = f"{len(one)} + {len(two)} cycles, load GPU {uuid}: need 2 per phase"
        return [Check("one_busy_process", False, reason)]
    return [
        check_one_busy(one, uuid),
        check_two_loads(two, uuid),
        check_gpm([*one, *two[1:]], uuid),
        check_energy(one, uuid, one_reads),
    ]
