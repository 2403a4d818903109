"""Fixtures for the Kubernetes side: a fake API server on loopback and the real client on it."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from fakeapi import FakeApiServer, FakeCluster
from kube.cluster_fixture import TIMEOUT_S, TIMING_OUT_S, fixture_objects
from kubernetes import client as k8s

from reclaimer.kube.client import KubeApi, api_from_configuration


@pytest.fixture
def cluster() -> FakeCluster:
    """The fixture cluster with Volcano and Kubeflow installed; tests may change it first."""
    c = FakeCluster()
    c.add(*fixture_objects())
    return c


@pytest.fixture
def server(cluster: FakeCluster) -> Iterator[FakeApiServer]:
    srv = FakeApiServer(cluster).start()
    try:
        yield srv
    finally:
        srv.stop()


@pytest.fixture
def api(server: FakeApiServer) -> Iterator[KubeApi]:
    kube = api_from_configuration(k8s.Configuration(host=server.url), timeout=TIMEOUT_S)
    try:
        yield kube
    finally:
        kube.close()


@pytest.fixture
def timing_out_api(server: FakeApiServer) -> Iterator[KubeApi]:
    """The real client with a short deadline, for an answer the fake holds back (`NEVER_S`)."""
    kube = api_from_configuration(k8s.Configuration(host=server.url), timeout=TIMING_OUT_S)
    try:
        yield kube
    finally:
        kube.close()
