"""PodDisruptionBudgets against whole jobs, with the API server's label-selector semantics."""

from __future__ import annotations

from types import MappingProxyType
from typing import Any

import pytest

from reclaimer.kube.objects.disruption import blocking_budget, disruptions_allowed, selects
from reclaimer.model import Pod, PodPhase

APP = {"app": "train", "tier": "gpu"}


@pytest.mark.parametrize(
    ("selector", "labels", "expected"),
    [
        pytest.param(None, APP, False, id="null-selects-nothing"),
        pytest.param({}, APP, True, id="empty-selects-everything"),
        pytest.param({}, {}, True, id="empty-selects-unlabelled-pods"),
        pytest.param({"matchLabels": {"app": "train"}}, APP, True, id="match-labels"),
        pytest.param({"matchLabels": {"app": "serve"}}, APP, False, id="match-labels-differ"),
        pytest.param(
            {"matchExpressions": [{"key": "tier", "operator": "In", "values": ["gpu", "x"]}]},
            APP,
            True,
            id="in",
        ),
        pytest.param(
            {"matchExpressions": [{"key": "zone", "operator": "In", "values": ["a"]}]},
            APP,
            False,
            id="in-needs-the-key",
        ),
        pytest.param(
            {"matchExpressions": [{"key": "zone", "operator": "NotIn", "values": ["a"]}]},
            APP,
            True,
            id="not-in-holds-when-the-key-is-absent",
        ),
        pytest.param(
            {"matchExpressions": [{"key": "tier", "operator": "NotIn", "values": ["gpu"]}]},
            APP,
            False,
            id="not-in",
        ),
        pytest.param(
            {"matchExpressions": [{"key": "app", "operator": "Exists"}]}, APP, True, id="exists"
        ),
        pytest.param(
            {"matchExpressions": [{"key": "app", "operator": "DoesNotExist"}]},
            APP,
            False,
            id="does-not-exist",
        ),
        pytest.param(
            {
                "matchLabels": {"app": "train"},
                "matchExpressions": [{"key": "tier", "operator": "In", "values": ["cpu"]}],
            },
            APP,
            False,
            id="labels-and-expressions-must-all-hold",
        ),
        pytest.param(
            {"matchExpressions": [{"key": "app", "operator": "Like", "values": ["t"]}]},
            APP,
            False,
            id="unknown-operator-selects-nothing",
        ),
    ],
)
def test_selector_semantics(selector: object, labels: dict[str, str], expected: bool) -> None:
    assert selects(selector, labels) is expected


def _pdb(allowed: int | None, selector: object = None, **meta: Any) -> dict[str, Any]:
    obj: dict[str, Any] = {
        "metadata": {"name": "keep", "namespace": "team", **meta},
        "spec": {"selector": {"matchLabels": {"app": "train"}} if selector is None else selector},
    }
    if allowed is not None:
        obj["status"] = {"disruptionsAllowed": allowed, "observedGeneration": 1}
    return obj


def _pods(n: int, phase: PodPhase = PodPhase.RUNNING, **labels: str) -> list[Pod]:
    return [
        Pod(
            key=f"team/w-{i}",
            namespace="team",
            name=f"w-{i}",
            node="n1",
            gpus=1,
            phase=phase,
            job="team/job",
            labels=MappingProxyType({"app": "train", **labels}),
        )
        for i in range(n)
    ]


@pytest.mark.parametrize(
    ("pods", "pdb", "blocked"),
    [
        pytest.param(_pods(2), _pdb(1), True, id="two-pods-one-allowed"),
        pytest.param(_pods(2), _pdb(2), False, id="two-pods-two-allowed"),
        pytest.param(_pods(1), _pdb(None), True, id="no-status-allows-nothing"),
        pytest.param(_pods(1), _pdb(5, generation=2), True, id="status-behind-generation"),
        pytest.param(_pods(2), _pdb(0, selector={}), True, id="empty-selector-takes-the-namespace"),
        pytest.param(
            _pods(2),
            _pdb(0, selector={"matchExpressions": [{"key": "app", "operator": "Exists"}]}),
            True,
            id="match-expressions-count",
        ),
        pytest.param(
            _pods(2), _pdb(0, selector={"matchLabels": {"app": "serve"}}), False, id="other-pods"
        ),
        pytest.param(_pods(2, PodPhase.PENDING), _pdb(0), False, id="unhealthy-pods-may-go"),
    ],
)
def test_a_budget_blocks_a_job_it_would_break(
    pods: list[Pod], pdb: dict[str, Any], blocked: bool
) -> None:
    why = blocking_budget("team/job", pods, [pdb])
    assert bool(why) is blocked
    if blocked:
        assert why.startswith("PodDisruptionBudget team/keep allows")


def test_a_budget_of_another_namespace_does_not_apply() -> None:
    pdb = _pdb(0, selector={})
    pdb["metadata"]["namespace"] = "elsewhere"
    assert blocking_budget("team/job", _pods(2), [pdb]) == ""
    assert disruptions_allowed({"status": {"disruptionsAllowed": -3}}) == 0
