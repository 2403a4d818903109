"""The gates every raise of time-slice replicas passes: memory headroom, then the load outlook.

A raise from r to t replicas lets t - r more pods onto each GPU of the node; they share its memory
with no isolation (a neighbour's growth OOM-kills a pod: k8s-device-plugin #323) and its time.

- Memory headroom: pods grow over their lives, and the pods a raise lets in are new ones, so
  the gate budgets by the pods' peaks over days (`Snapshot.memory_peaks`, each pod's most device
  memory over the last week), not by what they hold now. Every pod slot may come to hold the
  `memoryPeakQuantile` of those peaks (`slot_budget`); each pod on a GPU now is budgeted at its
  own peak or its reading now if either is more. t is allowed while, on every GPU, the pods
  there (at least the memory used now) plus one slot per further pod up to t stay within
  total x (1 - `memoryHeadroom`). Device memory unread (no FB_USED/FB_FREE bytes), peaks unread
  or fewer than `MIN_PEAK_PODS` pods measured refuse the raise: unknown is not free.
- Load outlook: the node's load must stay low for `raiseHorizon`, as long as the new pods run.
  `reclaimer.forecast.seasonal.outlook` gives the upper peak of the node's load over that horizon
  from its load history (`Node.load`); t is allowed while max(now, upper peak) x t / r stays at the
  middle of the underused/saturated band, as the raise itself aims. Too little history refuses.

Each gate lowers the target to what it allows, or refuses the raise with its reason
(`NoMemoryHeadroom`, `NoLoadHistory`, `LoadForecastHigh`). Pure.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from reclaimer.decisions import Reason, Skip
from reclaimer.forecast.seasonal import DEFAULT_PARAMS, SeasonalParams, outlook
from reclaimer.model import LoadHistory, MemoryPeaks, Node, PodGpuUsage
from reclaimer.policy.settings import TimeSlicing
from reclaimer.units import format_duration

GIB = 1024.0**3
MIN_PEAK_PODS = 10
"""A new pod's memory is budgeted from the peaks of at least this many measured pods."""
REFUSALS = frozenset(
    {
        Reason.NO_MEMORY_HEADROOM,
        Reason.LOAD_FORECAST_HIGH,
        Reason.NO_LOAD_HISTORY,
        Reason.RAISE_HELD,
    }
)
"""The reasons a raise is refused with (the gates', and the hold after pods did not fit,
`plan.harm`): the controller records each as a Normal Event on the node (once per node, reason
and reshape per process), as it does for actions."""


def memory_gate(
    node: Node,
    target: int,
    usage: Sequence[PodGpuUsage],
    ts: TimeSlicing,
    peaks: MemoryPeaks | None,
    *,
    budgeted: float | str | None = None,
) -> int | Skip:
    """The most replicas up to `target` whose pods leave the memory headroom, or the skip
    (`budgeted`: the cycle's `slot_budget` of `peaks`, when already known)."""
    r = node.replicas
    stats = node.gpu_stats
    if any(s.memory_used_bytes is None or not s.memory_total_bytes for s in stats):
        why = f"would raise {r} -> {target}, but device memory (FB_USED/FB_FREE) is not read"
        return Skip(node.name, Reason.NO_MEMORY_HEADROOM, why)
    slot = slot_budget(peaks, ts.memory_peak_quantile) if budgeted is None else budgeted
    if isinstance(slot, str):
        why = f"would raise {r} -> {target}, but {slot}"
        return Skip(node.name, Reason.NO_MEMORY_HEADROOM, why)
    held = held_by_gpu(node, usage, peaks, slot)
    fits = [
        n + (int((tot * (1.0 - ts.memory_headroom) - need) // slot) if slot > 0 else target)
        for (n, need), tot in zip(held, (s.memory_total_bytes or 0.0 for s in stats), strict=True)
    ]
    allowed = min([target, *fits])
    if allowed > r:
        return allowed
    why = _no_room(node, target, slot, (held, fits), ts)
    return Skip(node.name, Reason.NO_MEMORY_HEADROOM, why)


def slot_budget(peaks: MemoryPeaks | None, quantile: float) -> float | str:
    """Bytes each pod on a time-sliced GPU may come to hold: the `quantile` of the pods'
    measured peaks (the inverted-CDF quantile: a measured value, never below it); or why not."""
    if peaks is None:
        return "the pods' memory peaks are not read (gpu-reclaim's exporter's per-pod series)"
    if peaks.error:
        return f"the pods' memory peaks are unread: {peaks.error}"
    values = sorted(peaks.pods.values())
    if len(values) < MIN_PEAK_PODS:
        return (
            f"only {len(values)} pod(s) measured over the last {format_duration(peaks.window)}: "
            f"a new pod's memory is budgeted from at least {MIN_PEAK_PODS}"
        )
    return values[max(0, math.ceil(quantile * len(values)) - 1)]


def held_by_gpu(
    node: Node, usage: Sequence[PodGpuUsage], peaks: MemoryPeaks | None, slot: float
) -> list[tuple[int, float]]:
    """Per GPU of the node: (its pods, the bytes they may come to hold: each pod its own peak,
    its reading now, or `slot`, whichever is most; at least the memory used now). A pod on no
    GPU the node's stats name is counted on every GPU: unknown is not free."""
    known = {s.uuid for s in node.gpu_stats}
    rows = [u for u in usage if u.node == node.name]
    own = peaks.pods if peaks is not None else {}
    out = []
    for s in node.gpu_stats:
        here = [u for u in rows if u.gpu == s.uuid or u.gpu not in known or not s.uuid]
        budget = sum(max(slot, own.get(u.pod, 0.0), u.memory_bytes or 0.0) for u in here)
        out.append((len(here), max(budget, s.memory_used_bytes or 0.0)))
    return out


def _no_room(
    node: Node,
    target: int,
    slot: float,
    per_gpu: tuple[Sequence[tuple[int, float]], Sequence[int]],
    ts: TimeSlicing,
) -> str:
    """Why the fullest GPU refuses: its pods, their budget and the room left."""
    held, fits = per_gpu
    i = min(range(len(fits)), key=lambda k: fits[k])
    s = node.gpu_stats[i]
    used, total = (s.memory_used_bytes or 0.0) / GIB, (s.memory_total_bytes or 0.0) / GIB
    return (
        f"would raise {node.replicas} -> {target}: each pod may come to hold {slot / GIB:.1f} GiB "
        f"(the pods' {ts.memory_peak_quantile:.0%} memory peak); GPU {s.uuid or i} has "
        f"{held[i][0]} pod(s) budgeted {held[i][1] / GIB:.1f} GiB ({used:.1f} used) of "
        f"{total:.1f} GiB, must keep {ts.memory_headroom:.0%} free: room for "
        f"{max(fits[i], 0)} pod(s)"
    )


def load_gate(
    node: Node,
    target: int,
    util: float,
    ts: TimeSlicing,
    *,
    now: float,
    params: SeasonalParams = DEFAULT_PARAMS,
) -> int | Skip:
    """The most replicas up to `target` the node's load outlook allows, or the skip."""
    r, horizon = node.replicas, ts.raise_horizon_seconds
    ahead = format_duration(horizon)
    look = None if node.load is None else outlook(node.load, now, horizon, params)
    if look is None:
        why = f"would raise {r} -> {target}: {_sampled(node.load, now)}, needs " + format_duration(
            params.history_days * 86400 + horizon
        )
        return Skip(node.name, Reason.NO_LOAD_HISTORY, why)
    aim = (ts.underused_below + ts.saturated_above) / 2
    load = max(util, look.upper_peak)
    ok = [t for t in range(r + 1, target + 1) if load * t / r <= aim]
    if ok:
        return max(ok)
    why = (
        f"would raise {r} -> {target}: load may reach {look.upper_peak:.0%} within {ahead} "
        f"(forecast peak {look.peak:.0%} + {look.margin:.0%} margin from {look.origins} past "
        f"origins); at {r + 1} replicas that is {load * (r + 1) / r:.0%} > {aim:.0%}"
    )
    return Skip(node.name, Reason.LOAD_FORECAST_HIGH, why)


def _sampled(load: LoadHistory | None, now: float) -> str:
    """What the node's load history holds: its sampled hours, not its grid's length."""
    if load is None:
        return "no load history"
    sampled = sum(1 for v in load.values if not math.isnan(v)) * load.step
    span = format_duration(len(load.values) * load.step)
    ends = "" if now - load.end <= load.step else f", ending {format_duration(now - load.end)} ago"
    return f"load history sampled {format_duration(sampled)} of its {span}{ends}"
