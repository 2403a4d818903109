"""Fixtures the end-to-end tests share.

A module names its world by two functions, `world_history(now)` (the OpenMetrics text backfilled
into a real Prometheus) and `world_objects(now)` (what the fake API server holds); `prom`,
`cluster` and `kubeconfig` build them. A module that needs another shape defines
its own fixture of the same name, which wins. The history goes on live (`carry_on`), so that the
module's data is as fresh for its last test as for its first, however long a busy machine takes
over them.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from fakeapi import FakeCluster, served_kubeconfig
from promserver import PromServer, start_prometheus


@pytest.fixture(scope="module")
def now() -> float:
    """Wall-clock time once per module: the history and the cluster's timestamps agree on it."""
    return time.time()


@pytest.fixture(scope="module")
def prom(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory, now: float
) -> Iterator[PromServer]:
    """A real Prometheus holding the module's `world_history(now)`."""
    history = request.module.world_history(now)
    work = tmp_path_factory.mktemp("prom")
    with start_prometheus(work, history=history, carry_on=True) as server:
        yield server


@pytest.fixture
def cluster(request: pytest.FixtureRequest, now: float) -> FakeCluster:
    """The fake API server's state: the module's `world_objects(now)`."""
    c = FakeCluster()
    c.add(*request.module.world_objects(now))
    return c


@pytest.fixture
def kubeconfig(cluster: FakeCluster, tmp_path: Path) -> Iterator[Path]:
    with served_kubeconfig(cluster, tmp_path / "kubeconfig") as path:
        yield path
