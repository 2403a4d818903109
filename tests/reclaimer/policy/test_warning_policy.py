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


def test_a_webhook_names_one_of_namespace_and_queue_and_a_secret_key() -> None:
    hooks = load_policy(
        "warning: {webhooks: [{namespace: a, secretKey: a}, {queue: q, secretKey: b}]}"
    ).warning.webhooks
    assert [h.matches("a", "x") for h in hooks] == [True, False]
    assert [h.matches("z", "q") for h in hooks] == [False, True]
    with pytest.raises(PolicyError) as err:
        load_policy(
            "warning: {webhooks: [{namespace: a, queue: q, secretKey: k}, {namespace: a},"
            " {queue: q, secretKey: ../etc}]}"
        )
    assert err.value.errors == [
        "warning.webhooks[0]: set one of namespace and queue",
        "warning.webhooks[1].secretKey: a key of the webhook Secret (a file name) is required",
        "warning.webhooks[2].secretKey: a key of the webhook Secret (a file name) is required",
    ]
