"""How a `Plan` reads to people and to JSON: a table of actions, a table of skips, plain dicts.

`render_plan` is what the controller logs each cycle and `gpu-reclaimer` prints: one line per
action (ACTION, TARGET, REASON, EVIDENCE) and, after it, the skipped candidates grouped by reason
with a count and a few examples, so "why was my idle job not preempted" has an answer without a
debugger. `plan_to_dict` gives JSON-ready dicts (enums as their string values, no dataclasses)
for the controller's `/plan` endpoint and the simulator's logs. Both are pure.
"""

from __future__ import annotations

import textwrap
from collections import Counter
from collections.abc import Sequence
from dataclasses import asdict
from typing import Any

from reclaimer.decisions import Action, Evidence, Plan, Skip
from reclaimer.devices import count
from reclaimer.model import Forecast

_HEADERS = ("ACTION", "TARGET", "REASON", "EVIDENCE")


def action_to_dict(action: Action) -> dict[str, Any]:
    out: dict[str, Any] = {
        "kind": action.kind.value,
        "target": action.target,
        "reason": action.reason.value,
        "evidence": evidence_to_dict(action.evidence),
    }
    if action.job_kind is not None:
        out["job_kind"] = action.job_kind.value
    if action.from_replicas is not None or action.to_replicas is not None:
        out["from_replicas"] = action.from_replicas
        out["to_replicas"] = action.to_replicas
    return out


def evidence_to_dict(evidence: Evidence) -> dict[str, Any]:
    return {
        "forecast": forecast_to_dict(evidence.forecast) if evidence.forecast else None,
        "for_pending": evidence.for_pending,
        "for_queue": evidence.for_queue,
        "gpus_freed": evidence.gpus_freed,
        "detail": evidence.detail,
        **({"stop_at": evidence.stop_at} if evidence.stop_at is not None else {}),
    }


def forecast_to_dict(forecast: Forecast) -> dict[str, Any]:
    return asdict(forecast)


def skip_to_dict(skip: Skip) -> dict[str, Any]:
    return {"target": skip.target, "reason": skip.reason.value, "detail": skip.detail}


def plan_to_dict(plan: Plan) -> dict[str, Any]:
    """The plan as JSON-ready dicts, with counts per action kind and per skip reason."""
    return {
        "created_at": plan.created_at,
        "actions": [action_to_dict(a) for a in plan.actions],
        "skipped": [skip_to_dict(s) for s in plan.skipped],
        "warnings": [skip_to_dict(s) for s in plan.warnings],
        "queues": [asdict(q) for q in plan.queues],
        "summary": {
            "actions": dict(sorted(Counter(a.kind.value for a in plan.actions).items())),
            "gpus_freed": sum(a.evidence.gpus_freed for a in plan.actions),
            "skipped": dict(sorted(Counter(s.reason.value for s in plan.skipped).items())),
        },
    }


def action_rows(actions: Sequence[Action]) -> list[tuple[str, str, str, str]]:
    rows = []
    for a in actions:
        ev = a.evidence
        parts = [ev.detail] if ev.detail else []
        if not ev.detail and ev.gpus_freed:
            parts.append(f"frees {count(ev.gpus_freed, 'slots')}")
        if not ev.detail and ev.for_pending:
            parts.append(f"for {ev.for_pending}")
        rows.append((a.kind.value, a.target, a.reason.value, "; ".join(parts)))
    return rows


def render_plan(plan: Plan, *, examples: int = 3, width: int = 160) -> str:
    """A human-readable table of the plan's actions and a summary of what it skipped."""
    lines = [f"plan at {plan.created_at:.0f}: {len(plan.actions)} action(s)"]
    lines += [f"WARNING {w.reason.value} {w.target}: {w.detail}" for w in plan.warnings]
    if plan.actions:
        lines += _table([_HEADERS, *action_rows(plan.actions)], width, wrap=True)
    groups = skips_by_reason(plan.skipped)
    if groups:
        lines.append(f"skipped {len(plan.skipped)} candidate(s):")
        rows: list[tuple[str, ...]] = [("REASON", "COUNT", "EXAMPLES")]
        for reason, group in groups:
            shown = "; ".join(_skip_text(s) for s in group[:examples])
            more = f" (+{len(group) - examples} more)" if len(group) > examples else ""
            rows.append((reason, str(len(group)), shown + more))
        lines += _table(rows, width)
    return "\n".join(lines)


def skips_by_reason(skips: Sequence[Skip]) -> list[tuple[str, list[Skip]]]:
    """Skips grouped by reason, the largest group first (then by reason), plan order within."""
    by_reason: dict[str, list[Skip]] = {}
    for s in skips:
        by_reason.setdefault(s.reason.value, []).append(s)
    return sorted(by_reason.items(), key=lambda kv: (-len(kv[1]), kv[0]))


def _skip_text(skip: Skip) -> str:
    return f"{skip.target}: {skip.detail}" if skip.detail else skip.target


def _table(rows: Sequence[Sequence[str]], width: int, *, wrap: bool = False) -> list[str]:
    """Left-aligned columns; the last column is kept within `width`: wrapped onto indented
    lines where every word counts (an action's evidence), else cut (the skip examples)."""
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]) - 1)]
    out = []
    for row in rows:
        head = "  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=False))
        line = f"{head}  {row[-1]}" if head else row[-1]
        if len(line) <= width:
            out.append(line)
        elif wrap:
            indent = len(head) + 2
            parts = textwrap.wrap(row[-1], max(width - indent, 20)) or [""]
            out.append(f"{head}  {parts[0]}")
            out += [" " * indent + part for part in parts[1:]]
        else:
            out.append(line[: width - 1] + "…")
    return out
