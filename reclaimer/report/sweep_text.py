"""A capacity sweep's verdicts as JSON and as text lines (`simulate --capacity-sweep`).

The rule in force is named in both (`rule`: `per-queue` or `pooled`). Under the per-queue rule
each capacity shows the p95 that rule reads: the worst guaranteed queue's own, worst seed. Under
the pooled rule a pooled result never stands alone: each capacity shows the pooled p95 beside
the worst queue's own, and each strategy's per-queue `min_gpus` and saving are printed beside
its pooled ones (in JSON, `per_queue` in the strategy's entry), because a pooled p95 over
thousands of jobs can keep the SLO while a queue of a hundred waits days. Pure.
"""

from __future__ import annotations

from reclaimer.report.replay_data import PolicyVerdict, Rule, SweepSummary


def as_json(summary: SweepSummary, runs: list[dict[str, object]]) -> dict[str, object]:
    """The sweep's JSON: the rule, the verdicts (with the per-queue ones beside pooled ones)."""
    policies = {}
    for v in summary.verdicts:
        beside = summary.beside(v.strategy)
        policies[v.strategy] = v.as_dict() | (
            {"per_queue": beside.headline()} if beside is not None else {}
        )
    return {
        "slo_seconds": summary.slo_seconds,
        "rule": summary.rule.value,
        "seeds": list(summary.seeds),
        "capacity_range": summary.range_note,
        "policies": policies,
        "runs": runs,
    }


def lines(summary: SweepSummary) -> list[str]:
    """A header naming the rule, then per strategy its verdict line and its reason/caveats."""
    pooled = summary.rule is Rule.POOLED
    goal = "guaranteed pooled wait p95" if pooled else "every guaranteed queue's own wait p95"
    out = [
        f"SLO ({summary.rule.value} rule): {goal} <= {summary.slo_seconds:,.0f} s on seeds "
        f"{', '.join(map(str, summary.seeds))}; capacities: {summary.range_note}"
    ]
    for v in summary.verdicts:
        out.append(_verdict_line(v, summary.beside(v.strategy), pooled=pooled))
        out += [f"{'':<11} {x}" for x in (v.reason, *v.caveats) if x]
    return out


def _verdict_line(v: PolicyVerdict, beside: PolicyVerdict | None, *, pooled: bool) -> str:
    own = [f"{c.worst_wait(Rule.PER_QUEUE):,.0f}" for c in v.per_capacity]
    if pooled:
        own = [f"{c.worst_p95:,.0f} / {q}" for c, q in zip(v.per_capacity, own, strict=True)]
    p95 = "  ".join(f"{c.gpus}: {x}" for c, x in zip(v.per_capacity, own, strict=True))
    what = "pooled / worst queue p95 s" if pooled else "worst queue p95 s"
    per_queue = (
        ""
        if beside is None
        else f" (per-queue rule: min_gpus {or_dash(beside.min_gpus)}, saved vs none "
        f"{or_dash(beside.gpus_saved_vs_none)})"
    )
    return (
        f"{v.strategy:<11} min_gpus {or_dash(v.min_gpus)}  saved vs none "
        f"{or_dash(v.gpus_saved_vs_none)}{per_queue}  {what} by GPUs  {p95}"
    )


def or_dash(value: int | None) -> str:
    return "-" if value is None else str(value)
