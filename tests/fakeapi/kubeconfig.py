"""A kubeconfig file pointing the real `kubernetes` client at a fake API server."""

from __future__ import annotations

from pathlib import Path

import yaml


def write_kubeconfig(path: Path, server_url: str, token: str = "t") -> Path:
    config = {
        "apiVersion": "v1",
        "kind": "Config",
        "current-context": "fake",
        "clusters": [{"name": "fake", "cluster": {"server": server_url}}],
        "users": [{"name": "u", "user": {"token": token}}],
        "contexts": [{"name": "fake", "context": {"cluster": "fake", "user": "u"}}],
    }
    path.write_text(yaml.safe_dump(config))
    return path
