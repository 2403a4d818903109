"""RBAC grants every request the reclaimer's own code sends, and nothing the tests of
test_deploy.py list by hand can drift from it: each request of `reclaimer_flows.FLOWS` (every
stop and resume, eviction, reshape, Event, Lease), as the fake API server recorded it, is mapped
to the RBAC verb kube-apiserver authorizes it with and checked against the enforce overlay's
rendered roles: the writes, and the reads they need (the budgets before an eviction, each object
read again before it is written).
"""

from __future__ import annotations

from functools import cache

import pytest
from admission import Write
from kubewrites import where
from manifests import DEPLOY, grants, render
from reclaimer_flows import FLOWS, flow_cluster, run_flow

VERB = {
    ("CREATE", "CreateOptions"): "create",
    ("UPDATE", "PatchOptions"): "patch",
    ("UPDATE", "UpdateOptions"): "update",
}


def needed(write: Write) -> tuple[str, str, str, str]:
    """(namespace, apiGroup, resource[/subresource], verb) as RBAC sees the request."""
    r = write.request
    resource = r["resource"]["resource"]
    if r.get("subResource"):
        resource = f"{resource}/{r['subResource']}"
    verb = VERB[r["operation"], r["options"]["kind"]]
    return r.get("namespace", ""), r["resource"]["group"], resource, verb


@cache
def enforce_grants() -> set[tuple[str, str, str, str]]:
    return grants(render(DEPLOY / "overlays" / "enforce"), "gpu-reclaimer", "gpu-reclaim")


@pytest.mark.parametrize("flow", sorted(FLOWS))
def test_every_write_of_the_reclaimer_is_granted(flow: str) -> None:
    granted = enforce_grants()
    for write in run_flow(flow):
        namespace, group, resource, verb = needed(write)
        scopes = {"cluster", namespace}
        assert any((s, group, resource, verb) in granted for s in scopes), f"{write}: {verb}"


def test_the_writes_use_every_granted_write_verb() -> None:
    """No write verb is granted that no flow sends (least privilege, from the other side)."""
    sent = {needed(w)[1:] for flow in FLOWS for w in run_flow(flow)}
    granted = enforce_grants()
    writes = {(g, res, v) for _s, g, res, v in granted if v in ("create", "patch", "update")}
    assert writes - sent == set()


@pytest.mark.parametrize("flow", sorted(FLOWS))
def test_every_read_of_the_reclaimer_is_granted(flow: str) -> None:
    """A GET of one object is `get`, of a collection `list` (RBAC's request info resolver)."""
    granted = enforce_grants()
    reads = [r for r in flow_cluster(flow).requests if r.method == "GET"]
    for read in reads:
        group, _version, plural, namespace, name, sub = where(read.path)
        resource = f"{plural}/{sub}" if sub else plural
        verb = "get" if name else "list"
        scopes = {"cluster", namespace}
        assert any((s, group, resource, verb) in granted for s in scopes), f"{read.path}: {verb}"
