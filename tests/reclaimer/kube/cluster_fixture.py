"""The fixture cluster's objects and the client timeout the Kubernetes tests use."""

from __future__ import annotations

import copy
import functools
from typing import Any

import yaml
from repo_paths import FIXTURES

CLUSTER_YAML = FIXTURES / "cluster" / "cluster.yaml"
TIMEOUT_S = 0.5


@functools.cache
def _parsed() -> tuple[dict[str, Any], ...]:
    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    return tuple(d for d in yaml.load_all(CLUSTER_YAML.read_text(), Loader=loader) if d)


def fixture_objects() -> list[dict[str, Any]]:
    """A fresh deep copy each call: tests change objects in place."""
    return copy.deepcopy(list(_parsed()))
