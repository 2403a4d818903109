"""Capacity what-if: the fewest GPUs at which each strategy keeps the guaranteed queues' SLO.

Capacities are the GPU counts that `--capacity-scale` can give: `parse_nodes` keeps the first
`round(n * scale)` nodes of each GPU count, so as the scale grows nodes join one at a time, in a
fixed order, and each count reached on the way is a *capacity point*, with the scale of fewest
decimals that gives it. The default range runs from half the trace's peak concurrent demand
(`peak_demand`: the most GPUs its jobs would hold at once with room for all) up to the first
point at or above that peak, where nothing should wait.

`minimum` applies the rule: a capacity meets the SLO when, on every seed, the wait p95 the
`Rule` reads is at most the SLO (`Rule.PER_QUEUE`, the default: every guaranteed queue's own p95,
so that a small queue cannot starve behind a large one that keeps the pooled p95 low;
`Rule.POOLED`: one p95 over all their jobs), the guaranteed jobs' slowdown p95 at most
`max_slowdown` (default `DEFAULT_MAX_SLOWDOWN`), no guaranteed job was OOM-killed and the
guaranteed `ls` pods' co-busy share (`ls_cobusy_share`, `sim_sharing.cobusy`) at most
`max_ls_cobusy` (default `DEFAULT_MAX_LS_COBUSY`), and no guaranteed job failed (its Job's
`backoffLimit`, `sim_pool.crashes`); `min_gpus` is the fewest GPUs from which every larger capacity
tried meets it too (a queue can wait longer with more GPUs, so a capacity that meets the SLO below
one that does not is reported as a caveat, not taken). No capacity meeting it is `null` with the
reason, never a guess; a pooled minimum where a guaranteed queue's own p95 misses the SLO says so
in its caveats; a minimum at the smallest capacity tried is only an upper bound (said in the
caveats), and a saving against `none` is `null` unless both minima are known exactly.
Pure: no files, no processes.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace

import numpy as np
import pandas as pd

from reclaimer.report.replay_data import CapacityResult, PolicyVerdict, Rule
from reclaimer.simulate.strategies import Strategy
from reclaimer.simulate.trace import NODE_MEMORY_COLUMN, Jobs, Nodes, parse_nodes

DEFAULT_MAX_SLOWDOWN = 1.10
# While a neighbour is busy, time-slicing gives each pod with work an equal share of the GPU
# (GPU Operator docs), so a latency-sensitive request served then can take up to twice as long.
# If at most 5% of the LS pods' busy time has a busy neighbour, at least 95% of their work runs
# with the GPU to itself: their p95 latency is the dedicated one, the same 95th percentile the
# wait goal holds. `--max-ls-cobusy 1` turns the rule off.
DEFAULT_MAX_LS_COBUSY = 0.05


@dataclass(frozen=True)
class RunPoint:
    """One replay's outcome, as the rule reads it."""

    gpus: int
    scale: float
    seed: int
    p95: float  # guaranteed pooled wait p95, seconds
    worst_queue: tuple[str, float]  # the guaranteed queue of highest own wait p95, and that p95
    slowdown: float = 1.0  # guaranteed_slowdown_p95
    oom_kills: int = 0  # guaranteed_oom_kills
    ls_cobusy: float = 0.0  # ls_cobusy_share
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
    if every_node.measured_memory:  # measured devices stay measured at every capacity
        frame[NODE_MEMORY_COLUMN] = [gib * 1024.0 for gib in every_node.memory_gib]
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
    rule: Rule = Rule.PER_QUEUE,
    max_ls_cobusy: float = DEFAULT_MAX_LS_COBUSY,
) -> tuple[CapacityResult, ...]:
    """One strategy's runs, per capacity, fewest GPUs first, judged by `rule`'s wait p95."""
    grouped: dict[tuple[int, float], dict[int, RunPoint]] = {}
    for run in runs:
        grouped.setdefault((run.gpus, run.scale), {})[run.seed] = run

    def waits_ok(r: RunPoint) -> bool:
        return (r.p95 if rule is Rule.POOLED else r.worst_queue[1]) <= slo_seconds

    return tuple(
        CapacityResult(
            g,
            s,
            {seed: r.p95 for seed, r in seeds.items()},
            all(
                waits_ok(r)
                and r.slowdown <= max_slowdown
                and r.oom_kills == 0
                and r.ls_cobusy <= max_ls_cobusy
                and r.failed_jobs == 0
                for r in seeds.values()
            ),
            {seed: r.slowdown for seed, r in seeds.items()},
            {seed: r.oom_kills for seed, r in seeds.items()},
            {seed: r.worst_queue for seed, r in seeds.items()},
            all(r.worst_queue[1] <= slo_seconds for r in seeds.values()),
            {seed: r.ls_cobusy for seed, r in seeds.items()},
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
            f"pooled wait p95 is {last.worst_p95:,.0f} s, {_worst_queue(last)}"
            f"{_sharing_note(last)})"
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
    """At a pooled minimum, a guaranteed queue whose own p95 misses the SLO."""
    if result.queues_meet_slo:
        return ""
    return (
        f"at {result.gpus} GPUs the pooled p95 keeps the SLO but {_worst_queue(result)}; the "
        f"per-queue rule (the default) holds every guaranteed queue to the SLO"
    )


def _worst_queue(result: CapacityResult) -> str:
    """The guaranteed queue of highest own wait p95 over the seeds, with its seed."""
    if not result.worst_queue_by_seed:
        return "no queue's own p95 recorded"
    seed, (queue, p95) = max(result.worst_queue_by_seed.items(), key=lambda kv: kv[1][1])
    return f"queue {queue}'s own wait p95 is {p95:,.0f} s (seed {seed})"


def _sharing_note(result: CapacityResult) -> str:
    """What time-slicing cost the guaranteed jobs, when it cost them anything."""
    slow = max(result.slowdown_by_seed.values(), default=1.0)
    kills = max(result.oom_by_seed.values(), default=0)
    parts = [f"slowdown p95 {slow:.2f}"] if slow > 1.0 else []
    parts += [f"{kills} guaranteed OOM kills"] if kills else []
    cobusy = max(result.ls_cobusy_by_seed.values(), default=0.0)
    parts += [f"LS co-busy share {cobusy:.3f}"] if cobusy > 0 else []
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


def note_empty_pools(
    verdicts: Sequence[PolicyVerdict], empty: Mapping[str, Sequence[int]]
) -> tuple[PolicyVerdict, ...]:
    """A caveat on each time-slicing strategy whose pool came out empty at some capacities
    (`empty`: strategy -> those GPU counts): there it time-sliced nothing."""
    return tuple(
        replace(
            v,
            caveats=(
                *v.caveats,
                f"its time-sliced pool is empty at {_gpus(sorted(set(empty[v.strategy])))}: it "
                "time-slices nothing there (see --pool-share)",
            ),
        )
        if empty.get(v.strategy)
        else v
        for v in verdicts
    )


def describe_range(points: Sequence[CapacityPoint], peak: float | None) -> str:
    gpus = ", ".join(str(p.gpus) for p in points)
    if peak is None:
        return f"capacities given with --capacities: {gpus} GPUs"
    return (
        f"from half the trace's peak concurrent demand ({peak:,.1f} GPUs) up to the first "
        f"capacity at or above it: {gpus} GPUs (every count --capacity-scale gives in that range)"
    )
