"""The plan on the status page: what needs looking at, what was planned and why, what was not.

Actions come with their reason, their evidence (the same words as the logged plan table,
`reclaimer.report.plan_table.action_rows`) and what the actuator answered. Skips are grouped by
reason, largest group first, each group a `<details>` element (it opens without JavaScript)
listing its first `examples` candidates with why; `/plan` has them all. Lists are capped so that
the page stays small on a large fleet, and the page says what it left out.
"""

from __future__ import annotations

from collections.abc import Sequence

from reclaimer.model import ActionResult, Plan, Skip
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


def actions_section(report: CycleReport, plan: Plan) -> str:
    if not plan.actions:
        return section("Planned actions", paragraph("No action planned this cycle."), "actions")
    shown = plan.actions[:MAX_ACTIONS]
    answers = _answers(report.outcomes)
    rows = [
        (esc(kind), esc(target), esc(reason), esc(evidence), _outcome(answers.get(i), report))
        for i, (kind, target, reason, evidence) in enumerate(action_rows(shown))
    ]
    markup = table(("Action", "Target", "Reason", "Evidence", "Outcome"), rows)
    if len(plan.actions) > len(shown):
        left = len(plan.actions) - len(shown)
        markup += paragraph(f"… and {count(left, 'more action')} (all in /plan).")
    return section(f"Planned actions ({len(plan.actions):,})", markup, "actions")


def _answers(outcomes: Sequence[ActionResult]) -> dict[int, ActionResult]:
    """The actuator's results by the index of their action (it answers in plan order)."""
    return dict(enumerate(outcomes))


def _outcome(result: ActionResult | None, report: CycleReport) -> str:
    if result is None:
        why = "not sent (withheld, not the leader, or no cluster to act on)"
        return element("span", esc("acted" if report.acted else why), class_="muted")
    kind = "ok" if result.outcome.done else "bad"
    words = f"{result.outcome}: {result.detail}" if result.detail else str(result.outcome)
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
