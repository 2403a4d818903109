"""The plan on the status page: what needs looking at, what was planned and why, what was not.

Actions come with their reason, their evidence (the same words as the logged plan table,
`reclaimer.report.plan_table.action_rows`) and what the actuator answered. Skips are grouped by
reason, largest group first, each group a `<details>` element (it opens without JavaScript)
listing its first `examples` candidates with why; `/plan` has them all. Lists are capped so that
the page stays small on a large fleet, and the page says what it left out.
"""

from __future__ import annotations

from collections.abc import Sequence

from reclaimer.decisions import Action, ActionResult, Outcome, Plan, Reason, Skip
from reclaimer.report.cycle import CycleReport
from reclaimer.report.plan_table import action_rows, skips_by_reason
from reclaimer.report.status.markup import count, element, esc, paragraph, section, table

MAX_ACTIONS = 500
EXAMPLES_PER_REASON = 20
OPEN_UP_TO = 10  # a group this small is shown opened


def warnings_section(plan: Plan) -> str:
    if not plan.warnings:
        return ""
    rows = [(esc(w.reason), esc(w.target), esc(w.detail)) for w in plan.warnings]
    return section("Needs attention", table(("Warning", "Target", "Detail"), rows), "warnings")


def scheduled_section(plan: Plan) -> str:
    """The jobs warned of a stop, each with its stop time and the time left (`ReclaimScheduled`
    skips), so an owner looking at the page finds theirs before it happens."""
    rows = [
        (esc(s.target), esc(s.detail)) for s in plan.skipped if s.reason is Reason.RECLAIM_SCHEDULED
    ]
    if not rows:
        return ""
    return section("Stops scheduled", table(("Job", "Warned, stops at"), rows), "scheduled")


def actions_section(report: CycleReport, plan: Plan) -> str:
    if not plan.actions:
        return section("Planned actions", paragraph("No action planned this cycle."), "actions")
    shown = plan.actions[:MAX_ACTIONS]
    answers = _answers(shown, report.outcomes)
    rows = [
        (esc(kind), esc(target), esc(reason), esc(evidence), _outcome(answer, report))
        for (kind, target, reason, evidence), answer in zip(
            action_rows(shown), answers, strict=True
        )
    ]
    markup = table(("Action", "Target", "Reason", "Evidence", "Outcome"), rows)
    if len(plan.actions) > len(shown):
        left = len(plan.actions) - len(shown)
        markup += paragraph(f"… and {count(left, 'more action')} (all in /plan).")
    return section(f"Planned actions ({len(plan.actions):,})", markup, "actions")


def _answers(
    actions: Sequence[Action], outcomes: Sequence[ActionResult]
) -> list[ActionResult | None]:
    """The actuator's result for each action (it answers one per action, in plan order)."""
    got = list(outcomes[: len(actions)]) + [None] * max(0, len(actions) - len(outcomes))
    return [
        r if r is not None and r.action == a else None for a, r in zip(actions, got, strict=True)
    ]


def _outcome(result: ActionResult | None, report: CycleReport) -> str:
    if result is None:
        why = "not sent (withheld, not the leader, or no cluster to act on)"
        if report.acted:
            why = "no answer from the actuator"
        return element("span", esc(why), class_="muted")
    kind = "ok" if result.outcome.done else "warn" if result.outcome is Outcome.SKIPPED else "bad"
    words = str(result.outcome)
    if result.skip_reason is not None:
        words += f" ({result.skip_reason})"
    if result.detail:
        words += f": {result.detail}"
    return element("span", esc(words), class_=kind)


def skipped_section(plan: Plan, examples: int = EXAMPLES_PER_REASON) -> str:
    groups = skips_by_reason(plan.skipped)
    if not groups:
        return section("Skipped", paragraph("Nothing was considered and left alone."), "skipped")
    markup = "".join(_group(reason, skips, examples) for reason, skips in groups)
    title = f"Skipped ({count(len(plan.skipped), 'candidate')})"
    return section(title, markup, "skipped")


def _group(reason: str, skips: list[Skip], examples: int) -> str:
    rows = [(esc(s.target), esc(s.detail)) for s in skips[:examples]]
    body = table(("Target", "Why"), rows)
    if len(skips) > examples:
        body += paragraph(f"… and {len(skips) - examples:,} more (all in /plan).")
    summary = element("summary", f"{element('strong', esc(reason))} — {len(skips):,}")
    attrs = {"open": "open"} if len(skips) <= OPEN_UP_TO else {}
    return element("details", summary + body, **attrs)
