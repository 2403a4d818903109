"""The fixture cluster's objects and the client timeouts the Kubernetes tests use."""

from __future__ import annotations

import copy
import functools
from typing import Any

import yaml
from repo_paths import FIXTURES

CLUSTER_YAML = FIXTURES / "cluster" / "cluster.yaml"
TIMEOUT_S = 60.0  # a call's deadline: only a hung fake server reaches it, however busy the machine
# The deadline of a client that must time out on an answer the fake holds back (`NEVER_S`): short,
# so the test is quick; the test's other calls are answered by the local fake well within it.
TIMING_OUT_S = 5.0


@functools.cache
def _parsed() -> tuple[dict[str, Any], ...]:
    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    return tuple(d for d in yaml.load_all(CLUSTER_YAML.read_text(), Loader=loader) if d)


def fixture_objects() -> list[dict[str, Any]]:
    """A fresh deep copy each call: tests change objects in place."""
    return copy.deepcopy(list(_parsed()))
