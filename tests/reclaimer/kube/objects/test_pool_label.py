"""A node opts into the managed pool with the label `gpu-reclaim.io/time-slicing-pool: "true"`
(`Node.pool`); any other value, or none, leaves it out."""

from __future__ import annotations

from typing import Any

import pytest

from reclaimer.kube.objects.nodes import node


def _node(labels: dict[str, str]) -> dict[str, Any]:
    return {
        "metadata": {"name": "gpu-1", "labels": labels},
        "status": {"capacity": {"nvidia.com/gpu": "4"}},
    }


@pytest.mark.parametrize(
    ("labels", "pool"),
    [
        pytest.param({"gpu-reclaim.io/time-slicing-pool": "true"}, True, id="opted-in"),
        pytest.param({"gpu-reclaim.io/time-slicing-pool": "false"}, False, id="opted-out"),
        pytest.param({"gpu-reclaim.io/time-slicing-pool": "yes"}, False, id="not-true"),
        pytest.param({}, False, id="unlabelled"),
    ],
)
def test_the_pool_label_opts_a_whole_node_in(labels: dict[str, str], pool: bool) -> None:
    problems: list[str] = []
    decoded = node(_node(labels), None, (), problems)
    assert decoded is not None and not problems
    assert (decoded.gpus, decoded.replicas, decoded.pool) == (4, 1, pool)
