"""The fixture cluster's objects and the client timeout the Kubernetes tests use."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

CLUSTER_YAML = Path(__file__).resolve().parent.parent / "fixtures" / "cluster" / "cluster.yaml"
TIMEOUT_S = 0.5


def fixture_objects() -> list[dict[str, Any]]:
    return [d for d in yaml.safe_load_all(CLUSTER_YAML.read_text()) if d]
