"""An API server stand-in that turns gpu-reclaimer's writes into admission requests.

`FakeApiServer.call` stands in for `reclaimer.kube.client.call` (the one function every API call
of the reclaimer goes through; `serving()` routes the writer's and the Lease elector's calls
here): it serves reads from an in-memory store and turns each write into the `Write` that
admission would see (a merge patch applied to the stored object, with the server's own changes:
resourceVersion, managedFields, generation; a created object with its generated name), then
stores the result unless the write was a dry-run. `reclaimer_flows` runs the reclaimer's real
operations against it.
"""

from __future__ import annotations

import copy
import itertools
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import pytest
from admission import Write, admission_request

from reclaimer.kube import lease
from reclaimer.kube import write as kube_write
from reclaimer.kube.client import KubeApi, KubeError
from reclaimer.kube.objects import kinds
from reclaimer.kube.objects import resources as r

Obj = dict[str, Any]
RECLAIMER = "system:serviceaccount:gpu-reclaim:gpu-reclaimer"

# core/v1 resources the reclaimer writes: plural -> kind
CORE = {"pods": "Pod", "nodes": "Node", "configmaps": "ConfigMap", "events": "Event"}


def merge_patch(target: Any, patch: Any) -> Any:
    """RFC 7386 JSON merge patch."""
    if not isinstance(patch, dict):
        return copy.deepcopy(patch)
    out = copy.deepcopy(target) if isinstance(target, dict) else {}
    for key, value in patch.items():
        if value is None:
            out.pop(key, None)
        else:
            out[key] = merge_patch(out.get(key), value)
    return out


class FakeApiServer:
    def __init__(self, objects: list[Obj]) -> None:
        self.store: dict[tuple[str, str, str, str], Obj] = {}
        self.sent: list[Write] = []
        self.fail_creates = False  # refuse every create with 422 (a Command that is refused)
        self._rv = itertools.count(1000)
        for obj in objects:
            self.add(obj)

    # --- the store -------------------------------------------------------------------------
    def add(self, obj: Obj) -> Obj:
        obj = copy.deepcopy(obj)
        meta = obj["metadata"]
        meta.setdefault("uid", f"00000000-0000-4000-8000-{len(self.store):012d}")
        meta.setdefault("creationTimestamp", "2026-11-29T10:00:00Z")
        meta.setdefault("generation", 1)
        meta["resourceVersion"] = str(next(self._rv))
        meta["managedFields"] = [_managed("kubectl-client-side-apply", obj["apiVersion"])]
        self.store[self._key(obj)] = obj
        return obj

    def get(self, group: str, plural: str, namespace: str, name: str) -> Obj:
        try:
            return copy.deepcopy(self.store[(group, plural, namespace, name)])
        except KeyError:
            raise KubeError(404, "NotFound", f"{plural} {name} not found") from None

    @staticmethod
    def _key(obj: Obj) -> tuple[str, str, str, str]:
        api_version, kind = obj["apiVersion"], obj["kind"]
        group = api_version.rpartition("/")[0]
        plural = next((p for p, k in CORE.items() if k == kind and not group), "")
        if not plural:
            plural = kind.lower() + "s"
            for w in (*kinds.WORKLOADS, r.VOLCANO_COMMANDS, r.LEASES):
                res = getattr(w, "resource", w)
                if (res.group, res.kind) == (group, kind):
                    plural = res.plural
        meta = obj["metadata"]
        return group, plural, meta.get("namespace", ""), meta["name"]

    @contextmanager
    def serving(self) -> Iterator[FakeApiServer]:
        """Route the reclaimer's API calls here while the block runs."""
        with pytest.MonkeyPatch.context() as mp:
            for module in (kube_write, lease):
                mp.setattr(module, "call", self.call)
            yield self

    # --- reclaimer.kube.client.call --------------------------------------------------------
    def call(self, _api: KubeApi, method: Callable[..., Any], *args: Any, **kw: Any) -> Any:
        name = method.__name__
        dry = kw.get("dry_run") == "All"
        if name == "get_namespaced_custom_object":
            group, _version, ns, plural, obj_name = args
            return self.get(group, plural, ns, obj_name)
        if name == "list_cluster_custom_object":
            return {"items": []}  # no GPU operator ClusterPolicy
        if name == "list_namespaced_custom_object":  # Volcano Commands still waiting
            group, _version, ns, plural = args
            found = [o for k, o in self.store.items() if k[:3] == (group, plural, ns)]
            return {"items": copy.deepcopy(found)}
        if name == "list_namespaced_pod_disruption_budget":
            return {"items": []}
        if name == "read_namespaced_pod":
            return self.get("", "pods", args[1], args[0])
        if name == "read_node":
            return self.get("", "nodes", "", args[0])
        if name == "read_namespaced_config_map":
            return self.get("", "configmaps", args[1], args[0])
        if name == "list_node":
            return {"items": [copy.deepcopy(o) for k, o in self.store.items() if k[1] == "nodes"]}
        if name == "patch_namespaced_custom_object":
            group, version, ns, plural, obj_name, body = args
            return self.update((group, version, plural), ns, obj_name, body, dry, patch=True)
        if name == "replace_namespaced_custom_object":
            group, version, ns, plural, obj_name, body = args
            return self.update((group, version, plural), ns, obj_name, body, dry, patch=False)
        if name == "create_namespaced_custom_object":
            group, version, ns, plural, body = args
            return self.create((group, version, plural), ns, body, dry)
        if name in ("patch_namespaced_pod", "patch_namespaced_config_map"):
            plural = "pods" if name.endswith("pod") else "configmaps"
            return self.update(("", "v1", plural), args[1], args[0], args[2], dry, patch=True)
        if name == "patch_node":
            return self.update(("", "v1", "nodes"), "", args[0], args[1], dry, patch=True)
        if name == "create_namespaced_event":
            return self.create(("", "v1", "events"), args[0], args[1], dry)
        if name == "create_namespaced_pod_eviction":
            return self.evict(args[1], args[0], args[2], dry)
        raise AssertionError(f"the fake API server does not serve {name}")

    def update(
        self, gvr: tuple[str, str, str], ns: str, name: str, body: Obj, dry: bool, *, patch: bool
    ) -> Obj:
        group, _version, plural = gvr
        old = self.get(group, plural, ns, name)
        wanted = (body.get("metadata") or {}).get("resourceVersion")
        if wanted and wanted != old["metadata"]["resourceVersion"]:
            raise KubeError(409, "Conflict", "the object has been modified")
        if patch:
            new = merge_patch(old, body)
        else:  # a PUT: the server keeps what the body leaves out of the system fields
            new = copy.deepcopy(body)
            for system in ("uid", "creationTimestamp", "generation", "managedFields"):
                new["metadata"].setdefault(system, old["metadata"].get(system))
        new = _stored_update(old, new, str(next(self._rv)))
        options = "PatchOptions" if patch else "UpdateOptions"
        request = self._request("UPDATE", gvr, old["kind"], ns, name, dry, options=options)
        self.sent.append(Write(request, new, old))
        if not dry:
            self.store[(group, plural, ns, name)] = copy.deepcopy(new)
        return new

    def create(self, gvr: tuple[str, str, str], ns: str, body: Obj, dry: bool) -> Obj:
        group, _version, plural = gvr
        new = copy.deepcopy(body)
        meta = new.setdefault("metadata", {})
        meta["namespace"] = ns
        if not meta.get("name"):  # generated before validating admission runs
            meta["name"] = meta.get("generateName", "") + "x7k2p"
        meta.setdefault("uid", f"11111111-0000-4000-8000-{len(self.sent):012d}")
        meta.update(resourceVersion=str(next(self._rv)), creationTimestamp="2027-01-15T08:00:00Z")
        meta["managedFields"] = [_managed(r.CONTROLLER_NAME, new["apiVersion"])]
        request = self._request("CREATE", gvr, new["kind"], ns, meta["name"], dry)
        self.sent.append(Write(request, new, None))
        if self.fail_creates:
            raise KubeError(422, "Invalid", "create refused")
        if not dry:
            self.store[(group, plural, ns, meta["name"])] = copy.deepcopy(new)
        return new

    def evict(self, ns: str, name: str, body: Obj, dry: bool) -> Obj:
        self.get("", "pods", ns, name)  # 404 for a pod that is gone
        gvr = ("", "v1", "pods")
        request = self._request("CREATE", gvr, "Eviction", ns, name, dry, sub="eviction")
        request["kind"] = request["requestKind"] = {
            "group": "policy",
            "version": "v1",
            "kind": "Eviction",
        }
        self.sent.append(Write(request, copy.deepcopy(body), None))
        return {"kind": "Status", "status": "Success"}

    @staticmethod
    def _request(
        op: str,
        gvr: tuple[str, str, str],
        kind: str,
        ns: str,
        name: str,
        dry: bool,
        sub: str = "",
        options: str = "CreateOptions",
    ) -> Obj:
        """As kube-apiserver builds it: a patch is an UPDATE whose options are PatchOptions, a
        PUT one with UpdateOptions, a create (an eviction too) one with CreateOptions
        (k8s.io/apiserver/pkg/endpoints/handlers: patch.go, update.go, create.go)."""
        group, version, plural = gvr
        return admission_request(
            op,
            group=group,
            version=version,
            resource=plural,
            kind=kind,
            namespace=ns,
            name=name,
            sub_resource=sub,
            username=RECLAIMER,
            dry_run=dry,
            options={"kind": options, "apiVersion": "meta.k8s.io/v1"},
        )


def _managed(manager: str, api_version: str) -> Obj:
    return {
        "manager": manager,
        "operation": "Update",
        "apiVersion": api_version,
        "time": "2027-01-15T08:00:00Z",
        "fieldsType": "FieldsV1",
        "fieldsV1": {"f:metadata": {}},
    }


def _stored_update(old: Obj, new: Obj, resource_version: str) -> Obj:
    """What the API server itself changes on an update, before validating admission."""
    meta = new["metadata"]
    for empty in ("annotations", "labels"):  # ObjectMeta omits empty maps
        if meta.get(empty) == {}:
            del meta[empty]
    meta["resourceVersion"] = resource_version
    others = [
        m for m in old["metadata"].get("managedFields", []) if m["manager"] != "gpu-reclaimer"
    ]
    meta["managedFields"] = [*others, _managed(r.CONTROLLER_NAME, new["apiVersion"])]
    if new.get("spec") != old.get("spec"):
        meta["generation"] = (old["metadata"].get("generation") or 1) + 1
    return new
