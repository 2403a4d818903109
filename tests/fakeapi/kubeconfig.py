"""A kubeconfig file pointing the real `kubernetes` client at a fake API server."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import yaml

from fakeapi.server import FakeApiServer
from fakeapi.store import FakeCluster


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


@contextmanager
def served_kubeconfig(cluster: FakeCluster, path: Path) -> Iterator[Path]:
    """Serve `cluster` on a fake API server for the block; yields a kubeconfig pointing at it."""
    server = FakeApiServer(cluster).start()
    try:
        yield write_kubeconfig(path, server.url)
    finally:
        server.stop()
