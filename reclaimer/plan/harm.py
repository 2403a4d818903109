"""Evidence that a time-sliced node's pods do not fit it, and the lowering it calls for. Pure.

Time-slicing isolates no memory: when the pods sharing a GPU ask for more than it holds, the one
whose allocation fails crashes, restarts beside the same neighbour and crashes again
(k8s-device-plugin #323). Two kinds of evidence lower a node, down to 1 replica (whole GPUs, no
time-slicing), ahead of every load rule of `reshape`:

- crashes (`SharedPodsCrashed`): a container of a GPU pod on the node ended `OOMKilled` or with
  a non-zero exit (`Snapshot.crashes`, `kube.objects.crashes`) after the node's last reshape
  and within `harmRaiseHold`: the node goes one replica lower, or to what its pods' peaks
  allow if that is lower. A crash before the last reshape is evidence against the count before.
- peaks (`PodsDoNotFit`): on some GPU of the node, the pods there (the exporter's per-pod rows,
  `Snapshot.pod_gpus`), each at its own peak over the week (`Snapshot.memory_peaks`) or its
  reading now if more, add up to more than `podsDoNotFitAbove` of the GPU's memory: the node
  goes to the most replicas at which the largest of them fit together, at least 1.

After either, raises on the node are held for `harmRaiseHold` (`RaiseHeldAfterHarm`): from the
last crash the snapshot shows there, and from a lowering for harm (`Node.reshape_reason`, which
outlives the pods that crashed). A lowering waits for the node's cool-down like any reshape (the
actuator refuses one inside it) and evicts no pod: the pods there keep running, and the node
takes no new one until they are fewer than its replicas.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from reclaimer.decisions import Reason
from reclaimer.model import ContainerCrash, GpuStats, MemoryPeaks, Node, PodGpuUsage
from reclaimer.policy.settings import TimeSlicing
from reclaimer.units import format_duration

GIB = 1024.0**3
LOWERED_FOR_HARM = frozenset(
    {Reason.PODS_CRASHED.value, Reason.PODS_DO_NOT_FIT.value, Reason.PODS_CONTEND.value}
)


def by_node(crashes: Sequence[ContainerCrash]) -> dict[str, list[ContainerCrash]]:
    out: dict[str, list[ContainerCrash]] = {}
    for c in crashes:
        out.setdefault(c.node, []).append(c)
    return out


def lowering(
    node: Node,
    crashed: Sequence[ContainerCrash],
    usage: Sequence[PodGpuUsage],
    peaks: MemoryPeaks | None,
    ts: TimeSlicing,
    *,
    now: float,
) -> tuple[int, Reason, str] | None:
    """(replicas, reason, evidence) when the node's pods do not fit it; None when no evidence."""
    r = node.replicas
    if r <= 1:
        return None  # whole GPUs: nothing left to lower
    fit = peak_fit(node, usage, peaks, ts)
    recent = [
        c
        for c in crashed
        if now - c.at < ts.harm_raise_hold_seconds
        and (node.last_reshape is None or c.at > node.last_reshape)
    ]
    if recent:
        target = r - 1 if fit is None else min(r - 1, fit[0])
        why = _crashes_text(recent, now) + ("" if fit is None else f"; {fit[1]}")
        return max(1, target), Reason.PODS_CRASHED, f"{r} -> {max(1, target)} replicas: {why}"
    if fit is not None and fit[0] < r:
        return fit[0], Reason.PODS_DO_NOT_FIT, f"{r} -> {fit[0]} replicas: {fit[1]}"
    return None


def raise_hold(
    node: Node, crashed: Sequence[ContainerCrash], ts: TimeSlicing, *, now: float
) -> str | None:
    """Why raises on the node are held now (crashes, or a lowering for harm, within
    `harmRaiseHold`); None when they are not."""
    hold = ts.harm_raise_hold_seconds
    last = node.last_reshape
    if node.reshape_reason in LOWERED_FOR_HARM and last is not None and now - last < hold:
        ago = format_duration(max(0.0, now - last))
        return (
            f"lowered {ago} ago for {node.reshape_reason}: raises held for {format_duration(hold)}"
        )
    recent = [c for c in crashed if now - c.at < hold]
    if recent:
        return f"{_crashes_text(recent, now)}: raises held for {format_duration(hold)}"
    return None


def peak_fit(
    node: Node, usage: Sequence[PodGpuUsage], peaks: MemoryPeaks | None, ts: TimeSlicing
) -> tuple[int, str] | None:
    """(replicas at which every GPU's largest pods fit, why) for the fullest GPU whose pods at
    their peaks pass `podsDoNotFitAbove` of its memory; None when every GPU's pods fit."""
    own: Mapping[str, float] = peaks.pods if peaks is not None and not peaks.error else {}
    worst: tuple[int, str] | None = None
    for s in node.gpu_stats:
        if not s.uuid or not s.memory_total_bytes:
            continue  # device memory unread: no evidence either way
        here = [u for u in usage if u.node == node.name and u.gpu == s.uuid]
        budgets = sorted(
            ((max(own.get(u.pod, 0.0), u.memory_bytes or 0.0), u.pod) for u in here),
            reverse=True,
        )
        found = _overflow(s, budgets, ts.pods_do_not_fit_above)
        if found is not None and (worst is None or found[0] < worst[0]):
            worst = found
    return worst


def _overflow(
    s: GpuStats, budgets: Sequence[tuple[float, str]], share: float
) -> tuple[int, str] | None:
    """How many of one GPU's pods fit (the largest first) when all of them do not."""
    limit = (s.memory_total_bytes or 0.0) * share
    total = sum(b for b, _ in budgets)
    if total <= limit:
        return None
    fit, held = 0, 0.0
    for b, _ in budgets:
        if held + b > limit:
            break
        fit, held = fit + 1, held + b
    pods = ", ".join(f"{pod} {b / GIB:.1f} GiB" for b, pod in budgets)
    why = (
        f"on GPU {s.uuid} the pods at their week's peaks ({pods}) add up to {total / GIB:.1f} "
        f"GiB, more than {limit / GIB:.1f} GiB ({share:.0%} of its memory): {max(1, fit)} of "
        "the largest fit together"
    )
    return max(1, fit), why


def _crashes_text(crashes: Sequence[ContainerCrash], now: float) -> str:
    """The crashes named, newest first (at most three), and how many in all."""
    newest = sorted(crashes, key=lambda c: (-c.at, c.pod, c.container))
    named = "; ".join(
        f"{c.pod} ({c.container}) {c.reason or 'exited'} exit {c.exit_code} "
        f"{format_duration(max(0.0, now - c.at))} ago, {c.restarts} restart(s)"
        for c in newest[:3]
    )
    more = f" and {len(newest) - 3} more" if len(newest) > 3 else ""
    return f"{len(newest)} container crash(es) of pods sharing its GPUs: {named}{more}"


def lowest(
    *lowerings: tuple[int, Reason, str] | None,
) -> tuple[int, Reason, str] | None:
    """The lowest of the lowerings that hold evidence, or None; a tie is the first's (give the
    harm rules first: their reasons hold the node's raises, `raise_hold`)."""
    found = [low for low in lowerings if low is not None]
    return min(found, key=lambda low: low[0]) if found else None
