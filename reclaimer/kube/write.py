"""The raw writes the actuator makes, each one API call, dry-run aware, counted, leader-gated.

`KubeWriter` is the only object that sends writes to the API server. With `dry_run` every write
goes out with `dryRun=All`: the server validates it, runs admission and PodDisruptionBudget checks
and answers as it would, but stores nothing. Before each write it asks `may_write()` (the lease
deadline); a replica that is no longer sure to lead raises `NotLeader` instead of writing.
Reads (`get_*`, `list_node_labels`) are never gated: they change nothing.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from datetime import UTC, datetime
from typing import Any

from reclaimer.kube.client import KubeApi, call
from reclaimer.kube.objects import resources as r

Obj = dict[str, Any]


class NotLeader(Exception):
    """This replica may not write: it does not hold the lease, or its renew deadline passed."""


def rfc3339(t: float) -> str:
    return datetime.fromtimestamp(t, tz=UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def rfc3339_micro(t: float) -> str:
    return datetime.fromtimestamp(t, tz=UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


class KubeWriter:
    def __init__(
        self,
        api: KubeApi,
        dry_run: bool,
        may_write: Callable[[], bool] = lambda: True,
        field_manager: str = r.CONTROLLER_NAME,
    ) -> None:
        self.api = api
        self.dry_run = dry_run
        self.may_write = may_write
        self.field_manager = field_manager
        self.writes = 0  # writes sent (dry-run or not), for the actuator's results

    def _write(self, method: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        if not self.may_write():
            raise NotLeader("not the leader (or the lease renew deadline passed): not writing")
        if self.dry_run:
            kwargs["dry_run"] = "All"
        self.writes += 1
        return call(self.api, method, *args, field_manager=self.field_manager, **kwargs)

    # --- reads ---------------------------------------------------------------------------
    def get_custom(self, res: r.Resource, namespace: str, name: str) -> Obj:
        c = self.api.custom
        obj: Obj = call(
            self.api,
            c.get_namespaced_custom_object,
            res.group,
            res.version,
            namespace,
            res.plural,
            name,
        )
        return obj

    def get_pod(self, namespace: str, name: str) -> Obj:
        obj: Obj = call(self.api, self.api.core.read_namespaced_pod, name, namespace)
        return obj

    def get_node(self, name: str) -> Obj:
        obj: Obj = call(self.api, self.api.core.read_node, name)
        return obj

    def get_configmap(self, ref: r.ConfigMapRef) -> Obj:
        obj: Obj = call(self.api, self.api.core.read_namespaced_config_map, ref.name, ref.namespace)
        return obj

    def list_custom(self, res: r.Resource, namespace: str) -> list[Obj]:
        c = self.api.custom
        found = call(
            self.api, c.list_namespaced_custom_object, res.group, res.version, namespace, res.plural
        )
        return list(found.get("items") or [])

    def list_pdbs(self, namespace: str) -> list[Obj]:
        pdbs = call(self.api, self.api.policy.list_namespaced_pod_disruption_budget, namespace)
        return list(pdbs.get("items") or [])

    def list_nodes(self) -> dict[str, Obj]:
        nodes = call(self.api, self.api.core.list_node)
        return {n["metadata"]["name"]: n for n in nodes.get("items") or []}

    def list_cluster_custom(self, res: r.Resource) -> list[Obj]:
        c = self.api.custom
        found = call(self.api, c.list_cluster_custom_object, res.group, res.version, res.plural)
        return list(found.get("items") or [])

    # --- writes --------------------------------------------------------------------------
    def patch_custom(
        self, res: r.Resource, namespace: str, name: str, body: Mapping[str, Any]
    ) -> Obj:
        """A merge patch sent with `fieldValidation=Strict`: a field the CRD's schema does not
        declare answers 400 instead of being pruned silently (an old operator's CRD)."""
        c = self.api.custom
        obj: Obj = self._write(
            c.patch_namespaced_custom_object,
            res.group,
            res.version,
            namespace,
            res.plural,
            name,
            dict(body),
            field_validation="Strict",
            _content_type="application/merge-patch+json",
        )
        return obj

    def create_custom(self, res: r.Resource, namespace: str, body: Mapping[str, Any]) -> Obj:
        c = self.api.custom
        obj: Obj = self._write(
            c.create_namespaced_custom_object,
            res.group,
            res.version,
            namespace,
            res.plural,
            dict(body),
        )
        return obj

    def patch_pod(self, namespace: str, name: str, body: Mapping[str, Any]) -> Obj:
        obj: Obj = self._write(
            self.api.core.patch_namespaced_pod,
            name,
            namespace,
            dict(body),
            _content_type="application/merge-patch+json",
        )
        return obj

    def evict_pod(self, namespace: str, name: str, probe: bool = False) -> Obj:
        """policy/v1 Eviction; `probe` sends it as a server-side dry-run even when applying."""
        body: Obj = {
            "apiVersion": "policy/v1",
            "kind": "Eviction",
            "metadata": {"name": name, "namespace": namespace},
        }
        if probe and not self.dry_run:
            body["deleteOptions"] = {"dryRun": ["All"]}
        obj: Obj = self._write(self.api.core.create_namespaced_pod_eviction, name, namespace, body)
        return obj

    def patch_node(self, name: str, body: Mapping[str, Any]) -> Obj:
        obj: Obj = self._write(
            self.api.core.patch_node, name, dict(body), _content_type="application/merge-patch+json"
        )
        return obj

    def patch_configmap(self, ref: r.ConfigMapRef, body: Mapping[str, Any]) -> Obj:
        obj: Obj = self._write(
            self.api.core.patch_namespaced_config_map,
            ref.name,
            ref.namespace,
            dict(body),
            _content_type="application/merge-patch+json",
        )
        return obj

    def create_event(self, namespace: str, body: Mapping[str, Any]) -> Obj:
        obj: Obj = self._write(self.api.core.create_namespaced_event, namespace, dict(body))
        return obj


def event_body(
    involved: Mapping[str, str],
    reason: str,
    message: str,
    now: float,
    *,
    instance: str,
    warning: bool = False,
    name: str | None = None,
) -> Obj:
    """A core/v1 Event about `involved` (apiVersion, kind, name, namespace, uid), named `name`
    when given (so that writing it twice answers 409), else generated.

    Legacy-style (no `eventTime`): firstTimestamp/lastTimestamp/count, which every kubectl shows.
    """
    namespace = involved.get("namespace") or "default"
    meta = {"name": name} if name else {"generateName": f"{involved['name']}."}
    return {
        "apiVersion": "v1",
        "kind": "Event",
        "metadata": {**meta, "namespace": namespace},
        "involvedObject": {k: v for k, v in involved.items() if v},
        "reason": reason,
        "message": message[:1024],
        "type": "Warning" if warning else "Normal",
        "source": {"component": r.CONTROLLER_NAME},
        "reportingComponent": r.CONTROLLER_NAME,
        "reportingInstance": instance,
        "firstTimestamp": rfc3339(now),
        "lastTimestamp": rfc3339(now),
        "count": 1,
    }
