"""Capacity what-if: the fewest GPUs at which each strategy keeps the guaranteed queues' SLO.

Capacities are the GPU counts that `--capacity-scale` can give: `parse_nodes` keeps the first
`round(n * scale)` nodes of each GPU count, so as the scale grows nodes join one at a time, in a
fixed order, and each count reached on the way is a *capacity point*, with the scale of fewest
decimals that gives it. The default range runs from half the trace's peak concurrent demand
(`peak_demand`: the most GPUs its jobs would hold at once with room for all) up to the first
point at or above that peak, where nothing should wait.

`minimum` applies the rule: a capacity meets the SLO when, on every seed, the pooled guaranteed
wait p95 (with `per_queue`, every guaranteed queue's own p95 as well) is at most the SLO, the
guaranteed jobs' slowdown p95 at most `max_slowdown` (default `DEFAULT_MAX_SLOWDOWN`), no
guaranteed job was OOM-killed and none failed (its Job's `backoffLimit`, `sim_crashes`);
`min_gpus` is the fewest GPUs from which every larger capacity tried meets it too (a queue can
wait longer with more GPUs, so a capacity that meets the SLO below one that does not is reported
as a caveat, not taken). No capacity meeting it is `null` with the reason, never a guess; a
minimum where a guaranteed queue's own p95 misses the SLO that the pooled p95 keeps says so in
its caveats; a minimum at the smallest capacity tried is only an upper bound (said in the
caveats), and a saving against `none` is `null` unless both minima are known exactly.
Pure: no files, no processes.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from reclaimer.report.replay_data import CapacityResult, PolicyVerdict
from reclaimer.simulate.strategies import Strategy
from reclaimer.simulate.trace import Jobs, Nodes, parse_nodes

DEFAULT_MAX_SLOWDOWN = 1.10


@dataclass(frozen=True)
class RunPoint:
    """One replay's outcome, as the rule reads it."""

    gpus: int
    scale: float
    seed: int
    p95: float  # guaranteed pooled wait p95, seconds
    slowdown: float = 1.0  # guaranteed_slowdown_p95
    oom_kills: int = 0  # guaranteed_oom_kills
    worst_queue: tuple[str, float] = ("", 0.0)  # the guaranteed queue of highest own wait p95
    failed_jobs: int = 0  # guaranteed_failed_jobs


@dataclass(frozen=True)
class CapacityPoint:
    gpus: int
    scale: float  # a `--capacity-scale` that keeps exactly `gpus` GPUs


def nodes_at(every_node: Nodes, scale: float) -> Nodes:
    """The nodes `--capacity-scale scale` keeps, from every node of the list (in file order)."""
    frame = pd.DataFrame({"sn": list(every_node.names), "gpu": every_node.gpus})
    if every_node.models:
        frame["model"] = list(every_node.models)
    return parse_nodes(frame, scale)


def capacity_points(every_node: Nodes, up_to: int | None = None) -> tuple[CapacityPoint, ...]:
    """Every GPU count `parse_nodes` reaches as the scale grows (up to `up_to` GPUs)."""
    joins: set[float] = set()  # the scales at which a node joins
    for count in np.unique(every_node.gpus[every_node.gpus > 0]):
        n = int((every_node.gpus == count).sum())
        joins.update((rank + 0.5) / n for rank in range(n))
    bounds = [0.0, *sorted(joins), 1.0]
    points: dict[int, float] = {}
    for low, high in itertools.pairwise(bounds):
        scale = _shortest_between(low, high)
        gpus = int(nodes_at(every_node, scale).gpus.sum())
        points.setdefault(gpus, scale)
        if up_to is not None and gpus >= up_to:
            break
    return tuple(CapacityPoint(g, s) for g, s in sorted(points.items()))


def _shortest_between(low: float, high: float) -> float:
    """The scale with the fewest decimals strictly between two joins (0.006, not 0.0062147)."""
    for digits in range(1, 10):
        step = 10.0**-digits
        candidate = round((math.floor(low / step) + 1) * step, digits)
        if low < candidate < high:
            return candidate
    return (low + high) / 2


def peak_demand(jobs: Jobs) -> float:
    """The most GPUs the trace's jobs hold at once when every job starts on arrival."""
    times = np.concatenate([jobs.arrival, jobs.arrival + jobs.runtime])
    change = np.concatenate([jobs.gpus, -jobs.gpus])
    order = np.lexsort((change, times))  # at equal times, releases first
    return float(np.cumsum(change[order]).max())


def default_points(points: Sequence[CapacityPoint], peak: float) -> tuple[CapacityPoint, ...]:
    """From half the peak demand up to the first capacity point at or above the peak."""
    top = next((p.gpus for p in points if p.gpus >= peak), points[-1].gpus)
    return tuple(p for p in points if peak / 2 <= p.gpus <= top) or (points[-1],)


def chosen_points(points: Sequence[CapacityPoint], spec: str) -> tuple[CapacityPoint, ...]:
    """`--capacities`: GPU counts (`38,40,48`) or a range (`30-72`) of capacity points.

    Raises `ValueError` naming what is wrong (a count no scale gives, an empty range).
    """
    by_gpus = {p.gpus: p for p in points}
    reachable = ", ".join(str(g) for g in sorted(by_gpus))
    text = spec.strip()
    if "-" in text:
        low, _, high = text.partition("-")
        lo, hi = _count(low), _count(high)
        picked = tuple(p for p in points if lo <= p.gpus <= hi)
        if lo > hi or not picked:
            raise ValueError(f"no capacity in {lo}-{hi} GPUs; the node list gives {reachable}")
        return picked
    wanted = sorted({_count(part) for part in text.split(",")})
    missing = [g for g in wanted if g not in by_gpus]
    if missing:
        raise ValueError(f"no capacity scale gives {missing} GPUs; the node list gives {reachable}")
    return tuple(by_gpus[g] for g in wanted)


def _count(text: str) -> int:
    try:
        value = int(text.strip())
    except ValueError:
        raise ValueError(f"expected a number of GPUs, got {text.strip()!r}") from None
    if value <= 0:
        raise ValueError(f"a number of GPUs must be positive, got {value}")
    return value


def capacity_results(
    runs: Iterable[RunPoint],
    slo_seconds: float,
    max_slowdown: float = DEFAULT_MAX_SLOWDOWN,
    *,
    per_queue: bool = False,
) -> tuple[CapacityResult, ...]:
    """One strategy's runs, per capacity, fewest GPUs first; with `per_queue` the wait rule
    holds for every guaranteed queue's own p95, not only the pooled one."""
    grouped: dict[tuple[int, float], dict[int, RunPoint]] = {}
    for run in runs:
        grouped.setdefault((run.gpus, run.scale), {})[run.seed] = run

    def waits_ok(r: RunPoint) -> bool:
        return r.p95 <= slo_seconds and (not per_queue or r.worst_queue[1] <= slo_seconds)

    return tuple(
        CapacityResult(
            g,
            s,
            {seed: r.p95 for seed, r in seeds.items()},
            all(
                waits_ok(r) and r.slowdown <= max_slowdown and r.oom_kills == r.failed_jobs == 0
                for r in seeds.values()
            ),
            {seed: r.slowdown for seed, r in seeds.items()},
            {seed: r.oom_kills for seed, r in seeds.items()},
            {seed: r.worst_queue for seed, r in seeds.items()},
            all(r.worst_queue[1] <= slo_seconds for r in seeds.values()),
            {seed: r.failed_jobs for seed, r in seeds.items()},
        )
        for (g, s), seeds in sorted(grouped.items())
    )


def minimum(
    per_capacity: Sequence[CapacityResult],
) -> tuple[int | None, str | None, tuple[str, ...]]:
    """The fewest GPUs from which every larger capacity tried meets the SLO, or why none."""
    if not per_capacity:
        return None, "no capacity was replayed", ()
    last = per_capacity[-1]
    if not last.meets_slo:
        met = [c.gpus for c in per_capacity if c.meets_slo]
        reason = (
            f"no capacity tried meets the SLO (at {last.gpus} GPUs, the largest tried, the "
            f"wait p95 is {last.worst_p95:,.0f} s{_sharing_note(last)})"
        )
        note = (f"meets the SLO at {_gpus(met)} but not at every larger capacity",)
        return None, reason, note if met else ()
    i = len(per_capacity) - 1
    while i > 0 and per_capacity[i - 1].meets_slo:
        i -= 1
    found = per_capacity[i].gpus
    caveats: list[str] = []
    stray = [c.gpus for c in per_capacity[:i] if c.meets_slo]
    if stray:
        caveats.append(
            f"also meets the SLO at {_gpus(stray)}, but not at every capacity above it: "
            f"min_gpus counts from where it keeps meeting it"
        )
    hidden = _queue_over_slo(per_capacity[i])
    if hidden:
        caveats.append(hidden)
    if i == 0:
        caveats.append(
            f"meets the SLO at the smallest capacity tried: the minimum is at most {found}"
        )
    else:
        caveats.append(
            f"misses it at {per_capacity[i - 1].gpus} GPUs, the next capacity tried below"
        )
    return found, None, tuple(caveats)


def _queue_over_slo(result: CapacityResult) -> str:
    """At the minimum, a guaranteed queue whose own p95 misses the SLO the pooled p95 keeps."""
    if result.queues_meet_slo:
        return ""
    seed, (queue, p95) = max(result.worst_queue_by_seed.items(), key=lambda kv: kv[1][1])
    return (
        f"at {result.gpus} GPUs the pooled p95 keeps the SLO but queue {queue}'s own wait p95 is "
        f"{p95:,.0f} s (seed {seed}); --slo-per-queue applies the rule to every guaranteed queue"
    )


def _sharing_note(result: CapacityResult) -> str:
    """What time-slicing cost the guaranteed jobs, when it cost them anything."""
    slow = max(result.slowdown_by_seed.values(), default=1.0)
    kills = max(result.oom_by_seed.values(), default=0)
    parts = [f"slowdown p95 {slow:.2f}"] if slow > 1.0 else []
    parts += [f"{kills} guaranteed OOM kills"] if kills else []
    failed = max(result.failed_by_seed.values(), default=0)
    parts += [f"{failed} guaranteed jobs failed"] if failed else []
    return "".join(f", {p}" for p in parts)


def _gpus(counts: Sequence[int]) -> str:
    return ", ".join(str(g) for g in counts) + " GPUs"


def verdicts(
    per_strategy: dict[str, tuple[CapacityResult, ...]],
) -> tuple[PolicyVerdict, ...]:
    """Each strategy's minimum and its saving against `none` (which must be among them)."""
    found = {name: minimum(results) for name, results in per_strategy.items()}
    base = found[Strategy.NONE.value][0]
    at_floor = {n: bool(r) and found[n][0] == r[0].gpus for n, r in per_strategy.items()}
    out = []
    for name in (s.value for s in Strategy if s.value in per_strategy):
        least, reason, caveats = found[name]
        saved: int | None = None
        if name == Strategy.NONE.value:
            saved = None if least is None else 0
        elif least is None:
            pass  # `minimum` gave the reason
        elif base is None:
            reason = "`none` keeps the SLO at no capacity tried, so the saving is not known"
        elif at_floor[name] or at_floor[Strategy.NONE.value]:
            reason = (
                "a minimum at the smallest capacity tried is only an upper bound, so the saving "
                "is not known (try smaller capacities)"
            )
        else:
            saved = base - least
        out.append(PolicyVerdict(name, least, saved, reason, caveats, per_strategy[name]))
    return tuple(out)


def describe_range(points: Sequence[CapacityPoint], peak: float | None) -> str:
    gpus = ", ".join(str(p.gpus) for p in points)
    if peak is None:
        return f"capacities given with --capacities: {gpus} GPUs"
    return (
        f"from half the trace's peak concurrent demand ({peak:,.1f} GPUs) up to the first "
        f"capacity at or above it: {gpus} GPUs (every count --capacity-scale gives in that range)"
    )
