"""The policy's `warning:` section: the period looked up by queue, then kind, then `warnBefore`;
Notebooks warned 10 minutes ahead by default; unknown kinds refused at load."""

from __future__ import annotations

import pytest

from reclaimer.model import JobKind
from reclaimer.policy.settings import Policy, PolicyError, load_policy


def test_defaults_warn_notebooks_only() -> None:
    w = Policy().warning
    assert w.before(JobKind.NOTEBOOK, "any") == 600
    assert w.before(JobKind.PYTORCH_JOB, "any") == 0
    assert w.max_keep_seconds == 4 * 3600


def test_queue_then_kind_then_default() -> None:
    w = load_policy(
        "warning: {warnBefore: 5m, byKind: {Notebook: 30m}, byQueue: {prod: 1m}, maxKeep: 1h}"
    ).warning
    assert w.before(JobKind.NOTEBOOK, "prod") == 60
    assert w.before(JobKind.NOTEBOOK, "research") == 1800
    assert w.before(JobKind.VOLCANO_JOB, "research") == 300
    assert w.max_keep_seconds == 3600


def test_unknown_kinds_and_bad_durations_are_refused() -> None:
    with pytest.raises(PolicyError) as err:
        load_policy("warning: {byKind: {Notebok: 10m}, maxKeep: forever}")
    assert any(
        e.startswith("warning.byKind.Notebok: unknown workload kind") for e in err.value.errors
    )
    assert any(e.startswith("warning.maxKeep:") for e in err.value.errors)
