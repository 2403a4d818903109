"""The gates every raise of time-slice replicas passes: memory headroom, then the load outlook.

A raise from r to t replicas lets t - r more pods onto each GPU of the node; they share its memory
with no isolation (a neighbour's growth OOM-kills a pod: k8s-device-plugin #323) and its time.

- Memory headroom: each new pod is expected to hold as much device memory as the largest pod
  measured on the node (`Snapshot.pod_gpus`), and at least the fullest GPU's used memory per
  replica; on every GPU, used + (t - r) x that must stay within total x (1 - `memoryHeadroom`).
  Device memory unread (no FB_USED/FB_FREE bytes) refuses the raise: unknown is not free.
- Load outlook: the node's load must stay low for `raiseHorizon`, as long as the new pods run.
  `reclaimer.forecast.seasonal.outlook` gives the upper peak of the node's load over that horizon
  from its load history (`Node.load`); t is allowed while max(now, upper peak) x t / r stays at the
  middle of the underused/saturated band, as the raise itself aims. Too little history refuses.

Each gate lowers the target to what it allows, or refuses the raise with its reason
(`NoMemoryHeadroom`, `NoLoadHistory`, `LoadForecastHigh`). Pure.
"""

from __future__ import annotations

from collections.abc import Sequence

from reclaimer.decisions import Reason, Skip
from reclaimer.forecast.seasonal import DEFAULT_PARAMS, SeasonalParams, outlook
from reclaimer.model import Node, PodGpuUsage
from reclaimer.policy.settings import TimeSlicing
from reclaimer.units import format_duration

GIB = 1024.0**3
REFUSALS = frozenset({Reason.NO_MEMORY_HEADROOM, Reason.LOAD_FORECAST_HIGH, Reason.NO_LOAD_HISTORY})
"""The reasons a gate refuses a raise with: the controller records each as a Normal Event on the
node (once per node, reason and reshape per process), as it does for actions."""


def memory_gate(
    node: Node, target: int, usage: Sequence[PodGpuUsage], ts: TimeSlicing
) -> int | Skip:
    """The most replicas up to `target` whose new pods leave the memory headroom, or the skip."""
    r = node.replicas
    stats = node.gpu_stats
    if any(s.memory_used_bytes is None or not s.memory_total_bytes for s in stats):
        why = f"would raise {r} -> {target}, but device memory (FB_USED/FB_FREE) is not read"
        return Skip(node.name, Reason.NO_MEMORY_HEADROOM, why)
    used = [s.memory_used_bytes or 0.0 for s in stats]
    total = [s.memory_total_bytes or 0.0 for s in stats]
    pods = [u.memory_bytes for u in usage if u.node == node.name and u.memory_bytes is not None]
    per_pod = max([*pods, max(u / r for u in used)])
    room = [tot * (1.0 - ts.memory_headroom) - u for u, tot in zip(used, total, strict=True)]
    fits = min(int(free // per_pod) if per_pod > 0 else target - r for free in room)
    allowed = min(target, r + max(0, fits))
    if allowed > r:
        return allowed
    worst = min(range(len(room)), key=lambda i: room[i])
    why = (
        f"would raise {r} -> {target}: a new pod needs {per_pod / GIB:.1f} GiB (largest measured), "
        f"GPU {stats[worst].uuid or worst} has {used[worst] / GIB:.1f} of {total[worst] / GIB:.1f} "
        f"GiB used and must keep {ts.memory_headroom:.0%} free"
    )
    return Skip(node.name, Reason.NO_MEMORY_HEADROOM, why)


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
        have = (
            "none" if node.load is None else format_duration(len(node.load.values) * node.load.step)
        )
        need = format_duration(params.history_days * 86400 + horizon)
        why = f"would raise {r} -> {target}: load history {have}, needs {need} up to now"
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
