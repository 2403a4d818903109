"""Rendering a plan for people (table) and for JSON (plain dicts)."""

from __future__ import annotations

import json

from planworld import HOUR, World, starved_world

from reclaimer.decisions import Plan, Reason
from reclaimer.policy.settings import Policy, TimeSlicing
from reclaimer.report.plan_table import action_rows, plan_to_dict, render_plan


def _world() -> World:
    return (
        starved_world()
        .job("be/idle", "be", {"n1": 8}, idle=0.99)
        .job("be/busy", "be", {"n2": 8}, busy=True)
        .pend("ls/x", "ls", 8)
        .suspended("be/old", "be", 4)
        .acted("be/old", 600)
        .node("shared", gpus=2, replicas=2)
        .stats("shared", (0.05, 0.1), (0.1, 0.1))
    )


def test_plan_to_dict_is_json_ready_and_complete() -> None:
    plan = _world().plan(Policy(time_slicing=TimeSlicing(max_replicas=4)))
    data = json.loads(json.dumps(plan_to_dict(plan)))
    assert [(a["kind"], a["target"], a["reason"]) for a in data["actions"]] == [
        ("preempt", "be/idle", "IdleJobForStarvedQueue"),
        ("reshape", "shared", "NodeUnderused"),
    ]
    preempt, reshape = data["actions"]
    assert preempt["job_kind"] == "PyTorchJob"
    assert preempt["evidence"]["for_pending"] == "ls/x"
    assert preempt["evidence"]["for_queue"] == "ls"
    assert preempt["evidence"]["gpus_freed"] == 8
    assert preempt["evidence"]["forecast"]["confidence"] == 0.99
    assert (reshape["from_replicas"], reshape["to_replicas"]) == (2, 4)
    assert data["summary"] == {
        "actions": {"preempt": 1, "reshape": 1},
        "gpus_freed": 8,
        "skipped": {"CoolingDown": 1, "NotForecastIdle": 1},
    }
    assert {"target": "be/busy", "reason": "NotForecastIdle"}.items() <= data["skipped"][0].items()


def test_render_plan_table() -> None:
    text = render_plan(_world().plan())
    lines = text.splitlines()
    assert lines[0].endswith("2 action(s)")
    assert lines[1].split() == ["ACTION", "TARGET", "REASON", "EVIDENCE"]
    assert lines[2].split()[:3] == ["preempt", "be/idle", "IdleJobForStarvedQueue"]
    assert "frees 8 GPU slots" in lines[2]
    assert "for ls/x" in lines[2]
    assert any(line.startswith("CoolingDown") and "be/old" in line for line in lines)


def test_render_groups_skips_and_cuts_long_lines() -> None:
    world = starved_world()
    for i in range(6):
        world.job(f"be/j{i}", "be", {"n1": 1}, busy=True)
    text = render_plan(world.plan(), examples=2, width=80)
    (row,) = [line for line in text.splitlines() if line.startswith(Reason.NOT_IDLE.value)]
    assert " 6 " in row
    assert len(row) <= 80
    assert all(len(line) <= 80 for line in text.splitlines())


def test_empty_plan_renders() -> None:
    assert render_plan(Plan(created_at=5 * HOUR, actions=())) == "plan at 18000: 0 action(s)"
    assert plan_to_dict(Plan(created_at=1.0, actions=()))["summary"]["gpus_freed"] == 0


def test_an_action_s_evidence_is_wrapped_whole_never_cut() -> None:
    plan = _world().plan()
    (preempt,) = [a for a in plan.actions if a.kind.value == "preempt"]
    text = render_plan(plan, width=80)
    lines = text.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("preempt"))
    indent = lines[1].index("EVIDENCE")
    block = [lines[start]]
    for line in lines[start + 1 :]:
        if not line.startswith(" " * indent):
            break
        block.append(line)
    assert len(block) > 1 and all(len(line) <= 80 for line in block)
    assert " ".join(line[indent:].strip() for line in block) == " ".join(
        action_rows([preempt])[0][-1].split()
    )
