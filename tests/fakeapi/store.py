"""State and semantics of the fake API server, free of HTTP.

Objects are stored by (group, version, plural) and (namespace, name). Each write bumps a global
resourceVersion; a write carrying `metadata.resourceVersion` that is not current answers 409.
`dryRun=All` runs every check and answers as usual but stores nothing. Strategic-merge patches
are applied as JSON merge patches (`fakeapi.patching`): the reclaimer only patches maps (labels,
annotations, data, spec fields), where the two agree. Evictions check PodDisruptionBudgets like
the real server (`fakeapi.disruption`): 429 when the budget allows no disruption, 500 when more
than one budget selects the pod. Creates are checked first as the real server checks them
(`fakeapi.validation`). After each accepted write the controllers the fake runs react to it
(`fakeapi.trainer`: a TrainJob's suspend flows to its JobSet; `fakeapi.kueue`: a Workload's
`spec.active` evicts or requeues it). Which kinds and versions are served is `fakeapi.served`'s
table; the request log and the injected faults are `fakeapi.faults`'.

Deleting (or evicting) a pod is graceful: it stays Terminating for its grace period until the
tests, playing the kubelet, finish it (`fakeapi.lifecycle`).

`lock` serialises the served requests (`fakeapi.server` holds it while the store answers one)
with what tests do to the store while a client is talking to it: a test that changes objects
behind a running client's back does so under the lock (`fakeapi.volcano`), so no answer is
built from a half-made change.
"""

from __future__ import annotations

import copy
import threading
from dataclasses import dataclass, field
from functools import partial
from typing import Any

from fakeapi import draversions, kueue, scale, served, trainer
from fakeapi.disruption import budget_status, can_ignore_budgets, check_eviction, selects
from fakeapi.errors import ApiError
from fakeapi.faults import NEVER_S, Fault, Recorded, RequestFaults
from fakeapi.lifecycle import PODS, PodLifecycle, grace_period, iso
from fakeapi.patching import merge_patch
from fakeapi.schema import prune
from fakeapi.served import CRD_GROUPS, KNOWN, PDBS
from fakeapi.validation import check_create

Obj = dict[str, Any]

__all__ = ["CRD_GROUPS", "KNOWN", "NEVER_S", "PDBS", "FakeCluster", "Fault", "Recorded"]


@dataclass
class FakeCluster(PodLifecycle, RequestFaults):
    """Stored objects plus the request log and pending faults."""

    crd_groups: frozenset[str] = CRD_GROUPS
    objects: dict[tuple[str, str, str], dict[tuple[str, str], Obj]] = field(default_factory=dict)
    requests: list[Recorded] = field(default_factory=list)
    faults: list[Fault] = field(default_factory=list)
    version: int = 100
    serial: int = 0
    # training-operator CRD schemas (`fakeapi.schema.RUN_POLICY`: v1.6 has no runPolicy.suspend,
    # v1.9 adds runPolicy.managedBy)
    training_operator: str = "v1.8"
    trainer_release: str = "v2.3"  # TrainJob CRD schema (`fakeapi.schema.TRAINJOB_SPEC`)
    # the versions of Kueue's API served (one at a time: objects are not converted between them)
    kueue_versions: frozenset[str] = frozenset({"v1beta2"})
    compacted: int = 0  # continue tokens issued before this resourceVersion answer 410
    compact_during: str | None = None  # compact after serving a first page of this plural
    clock_offset: float = 0.0  # seconds `advance` has moved the fake's clock past the wall clock
    # resource.k8s.io versions served: v1 from Kubernetes 1.34, v1beta1 alone on 1.32; () none
    dra_versions: tuple[str, ...] = ("v1",)
    lock: threading.RLock = field(default_factory=threading.RLock, repr=False, compare=False)

    # --- test-side helpers -------------------------------------------------------------
    def add(self, *objs: Obj) -> None:
        for obj in objs:
            res = self.resource_of(obj)
            self._store(res, copy.deepcopy(obj))

    def get(self, group: str, version: str, plural: str, name: str, ns: str = "") -> Obj | None:
        return self.objects.get((group, version, plural), {}).get((ns, name))

    def all(self, group: str, version: str, plural: str) -> list[Obj]:
        return list(self.objects.get((group, version, plural), {}).values())

    # --- semantics -----------------------------------------------------------------------
    def resource_of(self, obj: Obj) -> tuple[str, str, str]:
        api = obj["apiVersion"]
        group, version = api.rsplit("/", 1) if "/" in api else ("", api)
        for (g, v, plural), (kind, _) in KNOWN.items():
            if (g, v, kind) == (group, version, obj["kind"]):
                return g, v, plural
        raise ValueError(f"unknown kind {api} {obj['kind']}")

    def check_served(self, group: str, version: str, plural: str) -> tuple[str, bool]:
        return served.kind_served(
            (group, version, plural),
            crd_groups=self.crd_groups,
            dra_versions=self.dra_versions,
            kueue_versions=self.kueue_versions,
        )

    def _store(self, res: tuple[str, str, str], obj: Obj) -> Obj:
        self.version += 1
        meta = obj.setdefault("metadata", {})
        meta["resourceVersion"] = str(self.version)
        if "uid" not in meta:
            self.serial += 1
            meta["uid"] = f"00000000-0000-0000-0000-{self.serial:012d}"
        meta.setdefault("creationTimestamp", "2026-01-01T00:00:00Z")
        kind, namespaced = KNOWN[res]
        obj.setdefault("kind", kind)
        obj.setdefault("apiVersion", f"{res[0]}/{res[1]}" if res[0] else res[1])
        key = (meta.get("namespace", "") if namespaced else "", meta["name"])
        self.objects.setdefault(res, {})[key] = obj
        return obj

    def current(self, res: tuple[str, str, str], ns: str, name: str) -> Obj:
        obj = self.objects.get(res, {}).get((ns, name))
        if obj is None:
            kind = KNOWN[res][0].lower()
            raise ApiError(404, "NotFound", f'{res[2]} "{name}" not found ({kind})')
        return obj

    def read(self, res: tuple[str, str, str], ns: str, name: str) -> Obj:
        """A GET's answer: a copy, with the status a controller would keep current."""
        return self._refreshed(res, copy.deepcopy(self.current(res, ns, name)))

    def _refreshed(self, res: tuple[str, str, str], obj: Obj) -> Obj:
        """Status a controller keeps current in a real cluster (only budgets, so far)."""
        if res == PDBS and obj.get("spec"):
            ns = obj["metadata"].get("namespace", "")
            pods = [p for k, p in self.objects.get(PODS, {}).items() if k[0] == ns]
            obj["status"] = budget_status(obj, pods, partial(scale.controller_scale, self))
        return obj

    def list(
        self, res: tuple[str, str, str], ns: str | None, start: int = 0, end: int | None = None
    ) -> list[Obj]:
        items = self.objects.get(draversions.stored(res), {})
        keys = sorted(k for k in items if ns is None or k[0] == ns)[start:end]
        return [
            draversions.served(self._refreshed(res, copy.deepcopy(items[k])), res[1])
            if res[0] == draversions.GROUP
            else self._refreshed(res, copy.deepcopy(items[k]))
            for k in keys
        ]

    def count(self, res: tuple[str, str, str], ns: str | None) -> int:
        items = self.objects.get(draversions.stored(res), {})
        return sum(1 for k in items if ns is None or k[0] == ns)

    def compact(self) -> None:
        """As etcd compaction does: every continue token issued so far expires (410)."""
        self.compacted = self.version + 1
        self.version += 1

    def create(
        self, res: tuple[str, str, str], ns: str, body: Obj, dry: bool, strict: bool = False
    ) -> Obj:
        check_create(res, KNOWN[res][0], ns if KNOWN[res][1] else "", body)
        obj = prune(
            res,
            copy.deepcopy(body),
            operator=self.training_operator,
            trainer=self.trainer_release,
            strict=strict,
        )
        meta = obj.setdefault("metadata", {})
        if not meta.get("name"):
            if not meta.get("generateName"):
                raise ApiError(422, "Invalid", "metadata.name: Required value")
            self.serial += 1
            meta["name"] = f"{meta['generateName']}{self.serial:05x}"
        if KNOWN[res][1]:
            meta["namespace"] = ns
        if (meta.get("namespace", "") if KNOWN[res][1] else "", meta["name"]) in self.objects.get(
            res, {}
        ):
            raise ApiError(409, "AlreadyExists", f'{res[2]} "{meta["name"]}" already exists')
        return copy.deepcopy(obj) if dry else self._written(res, obj)

    def _written(self, res: tuple[str, str, str], obj: Obj) -> Obj:
        """Store an accepted write, answer what was stored, then let the controllers the fake
        runs react to it (`fakeapi.trainer`), as they would right after."""
        stored = copy.deepcopy(self._store(res, obj))
        meta = stored["metadata"]
        trainer.reconcile(self, res, meta.get("namespace", ""), meta["name"])
        kueue.reconcile(self, res, meta.get("namespace", ""), meta["name"], iso(self.now()))
        return stored

    def _check_version(self, current: Obj, body: Obj) -> None:
        wanted = (body.get("metadata") or {}).get("resourceVersion")
        if wanted is not None and wanted != current["metadata"]["resourceVersion"]:
            name = current["metadata"]["name"]
            raise ApiError(
                409,
                "Conflict",
                f'Operation cannot be fulfilled on "{name}": the '
                "object has been modified; please apply your changes to the latest "
                "version and try again",
            )

    def replace(
        self,
        res: tuple[str, str, str],
        ns: str,
        name: str,
        body: Obj,
        dry: bool,
        strict: bool = False,
    ) -> Obj:
        current = self.current(res, ns, name)
        self._check_version(current, body)
        obj = prune(
            res,
            copy.deepcopy(body),
            operator=self.training_operator,
            trainer=self.trainer_release,
            strict=strict,
        )
        obj["metadata"]["uid"] = current["metadata"]["uid"]
        return obj if dry else self._written(res, obj)

    def patch(
        self,
        res: tuple[str, str, str],
        ns: str,
        name: str,
        body: Any,
        ctype: str,
        dry: bool,
        strict: bool = False,
    ) -> Obj:
        if "json-patch" in ctype or not isinstance(body, dict):
            raise ApiError(415, "UnsupportedMediaType", f"fake server does not take {ctype}")
        if "strategic-merge-patch" in ctype and res[0] in CRD_GROUPS:
            # custom resources have no Go struct to merge strategically (apiextensions-apiserver)
            raise ApiError(
                415,
                "UnsupportedMediaType",
                "the body of the request was in an unknown format - accepted media types "
                "include: application/json-patch+json, application/merge-patch+json, "
                "application/apply-patch+yaml",
            )
        current = self.current(res, ns, name)
        self._check_version(current, body)
        patched = merge_patch(current, body)
        merged = prune(
            res,
            patched,
            operator=self.training_operator,
            trainer=self.trainer_release,
            strict=strict,
        )
        merged["metadata"]["name"], merged["metadata"]["uid"] = name, current["metadata"]["uid"]
        return merged if dry else self._written(res, merged)

    def delete(
        self, res: tuple[str, str, str], ns: str, name: str, dry: bool, options: Any = None
    ) -> Obj:
        """Delete an object; a pod with a grace period is only marked Terminating."""
        obj = self.current(res, ns, name)
        grace = grace_period(obj, options) if res == PODS else 0
        if grace > 0 or (res == PODS and obj["metadata"].get("deletionTimestamp")):
            if not obj["metadata"].get("deletionTimestamp"):
                marked = copy.deepcopy(obj)
                marked["metadata"]["deletionTimestamp"] = iso(self.now() + grace)
                marked["metadata"]["deletionGracePeriodSeconds"] = grace
                obj = marked if dry else self._store(res, marked)
            return copy.deepcopy(obj)
        if not dry:
            del self.objects[res][(ns, name)]
            self.version += 1
        return copy.deepcopy(obj)

    def evict(self, ns: str, name: str, dry: bool, body: Any = None) -> Obj:
        """The pods/eviction subresource (eviction.go `Create`); see `fakeapi.disruption`."""
        pod = self.current(PODS, ns, name)
        options = (body or {}).get("deleteOptions") if isinstance(body, dict) else None
        if not can_ignore_budgets(pod):
            labels = pod["metadata"].get("labels") or {}
            budgets = [p for p in self.list(PDBS, ns) if selects(p["spec"].get("selector"), labels)]
            if len(budgets) > 1:
                raise ApiError(
                    500,
                    "InternalError",
                    "This pod has more than one PodDisruptionBudget, which the eviction "
                    "subresource does not support.",
                )
            if budgets:
                check_eviction(budgets[0], pod)
        self.delete(PODS, ns, name, dry, options)
        return {
            "kind": "Status",
            "apiVersion": "v1",
            "metadata": {},
            "status": "Success",
            "code": 201,
        }
