"""gpu-reclaimer's writes as admission sees them, from what the fake API server recorded.

`serving(objects)` starts the fake API server (`tests/fakeapi`) holding the objects and yields a
`Served`: the cluster, and a `KubeApi` of the real `kubernetes` client speaking HTTP to it. The
reclaimer's own code runs against it unchanged, reads (the PodDisruptionBudgets before an
eviction, the GPU operator's ClusterPolicy) included. `admitted(cluster)` then turns each
recorded write into the `Write` validating admission is handed, as kube-apiserver builds it
(k8s.io/apiserver/pkg/endpoints/handlers: create.go, update.go, patch.go, delete.go):
- the operation and options from the method: POST is a CREATE with CreateOptions (an eviction,
  `pods/eviction`, too, of kind policy/v1 Eviction), PUT an UPDATE with UpdateOptions, PATCH an
  UPDATE with PatchOptions, DELETE a DELETE with DeleteOptions;
- `dryRun` from the request's options (the query): an eviction's `deleteOptions.dryRun` in its
  body is not the request's;
- `object` what the server stored, or would have (its answer; for an eviction the Eviction
  sent), `oldObject` the stored object before the write (the server records both).
A write answered by an injected fault is admitted with the object the store makes of the request
when it only checks it (a dry run): validating admission runs before storage, so a create that
fails in storage was admitted as such.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from admission import Write, admission_request
from fakeapi import FakeApiServer, FakeCluster, Recorded
from kubernetes import client as k8s

from reclaimer.kube.client import KubeApi, api_from_configuration

Obj = dict[str, Any]
RECLAIMER = "system:serviceaccount:gpu-reclaim:gpu-reclaimer"
OPERATIONS = {
    "POST": ("CREATE", "CreateOptions"),
    "PUT": ("UPDATE", "UpdateOptions"),
    "PATCH": ("UPDATE", "PatchOptions"),
    "DELETE": ("DELETE", "DeleteOptions"),
}
EVICTION_KIND = {"group": "policy", "version": "v1", "kind": "Eviction"}


@dataclass(frozen=True)
class Served:
    cluster: FakeCluster
    api: KubeApi


@contextmanager
def serving(objects: list[Obj]) -> Iterator[Served]:
    """The fake API server holding `objects`, and the real client on it, while the block runs."""
    cluster = FakeCluster()
    cluster.add(*objects)
    server = FakeApiServer(cluster).start()
    api = api_from_configuration(k8s.Configuration(host=server.url), timeout=60.0)  # a hang
    try:
        yield Served(cluster, api)
    finally:
        api.close()
        server.stop()


def admitted(cluster: FakeCluster) -> list[Write]:
    """Every write the server was sent, in order, as admission sees it."""
    return [_write(cluster, rec) for rec in cluster.writes()]


def where(path: str) -> tuple[str, str, str, str, str, str]:
    """(group, version, plural, namespace, name, subresource) of an API path."""
    parts = [p for p in path.split("/") if p]
    if parts[0] == "api":
        group, version, rest = "", parts[1], parts[2:]
    else:
        group, version, rest = parts[1], parts[2], parts[3:]
    ns = ""
    if rest[0] == "namespaces" and len(rest) > 2:
        ns, rest = rest[1], rest[2:]
    rest += [""] * (3 - len(rest))
    return group, version, rest[0], ns, rest[1], rest[2]


def _write(cluster: FakeCluster, rec: Recorded) -> Write:
    group, version, plural, ns, name, sub = where(rec.path)
    op, options = OPERATIONS[rec.method]
    stored = rec.answer if 200 <= rec.code < 300 else None
    if sub == "eviction":
        obj, old = rec.body, None
    elif op == "CREATE":
        obj, old = stored or _checked_create(cluster, (group, version, plural), ns, rec.body), None
    elif op == "UPDATE":
        if stored is None:
            raise AssertionError(f"{rec.method} {rec.path} answered {rec.code}: nothing to admit")
        obj, old = stored, rec.old
    else:
        obj, old = None, rec.old
    kind = (obj or old or {}).get("kind", "")
    request = admission_request(
        op,
        group=group,
        version=version,
        resource=plural,
        kind=kind,
        namespace=ns,
        name=name or (obj or {}).get("metadata", {}).get("name", ""),
        sub_resource=sub,
        username=RECLAIMER,
        dry_run="All" in rec.query.get("dryRun", []),
        options={"kind": options, "apiVersion": "meta.k8s.io/v1"},
    )
    if sub == "eviction":
        request["kind"] = request["requestKind"] = dict(EVICTION_KIND)
    return Write(request, obj, old)


def _checked_create(cluster: FakeCluster, res: tuple[str, str, str], ns: str, body: Obj) -> Obj:
    """What the store makes of a create it only checks: validated, pruned, its name generated."""
    return cluster.create(res, ns, body, dry=True)
