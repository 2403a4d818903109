"""Pods on their way out, and the controllers' scale, for the fake API server's store.

Deleting (or evicting) a pod is graceful, as kube-apiserver's pod strategy makes it
(pkg/registry/core/pod/strategy.go `CheckGracefulDelete`, then the generic registry's
`BeforeDelete`): the grace period is the delete options' `gracePeriodSeconds`, else the pod's
`spec.terminationGracePeriodSeconds` (defaulted to 30), and 0 for a pod on no node or one that
has finished. With a grace period the pod stays, Terminating: `metadata.deletionTimestamp` is set
to now plus the grace period and `deletionGracePeriodSeconds` to it, until the kubelet confirms it
is gone. Here the tests play the kubelet: `finish_termination` removes terminating pods, and
`advance` moves the fake's clock and removes those whose grace period is over.

The scale of a pod's controller is read as the disruption controller's finders read it
(pkg/controller/disruption/disruption.go): `spec.replicas` of a ReplicaSet (or the Deployment
above it), a StatefulSet or a ReplicationController; any other kind would need a scale
subresource, which no custom resource served here has.
"""

from __future__ import annotations

import time
from datetime import UTC, datetime
from typing import Any

from fakeapi.disruption import ScaleError

Obj = dict[str, Any]
PODS = ("", "v1", "pods")
DEFAULT_GRACE_S = 30  # core/v1 defaults: DefaultTerminationGracePeriodSeconds
# controllers whose scale the disruption controller reads from spec.replicas (its `finders`)
SCALED = {
    ("apps", "StatefulSet"): ("apps", "v1", "statefulsets"),
    ("apps", "ReplicaSet"): ("apps", "v1", "replicasets"),
    ("apps", "Deployment"): ("apps", "v1", "deployments"),
    ("", "ReplicationController"): ("", "v1", "replicationcontrollers"),
}


class PodLifecycle:
    """Mixed into `FakeCluster`: its objects, version and clock offset."""

    objects: dict[tuple[str, str, str], dict[tuple[str, str], Obj]]
    version: int
    clock_offset: float

    def now(self) -> float:
        return time.time() + self.clock_offset

    def terminating(self) -> list[Obj]:
        """Pods being deleted that the kubelet has not confirmed gone yet."""
        pods = self.objects.get(PODS, {}).values()
        return [p for p in pods if p["metadata"].get("deletionTimestamp")]

    def finish_termination(self, ns: str | None = None, name: str | None = None) -> int:
        """As the kubelet does once a terminating pod's containers are gone: remove it (all
        terminating pods, or the one named). Returns how many went."""
        gone = [
            p
            for p in self.terminating()
            if (ns is None or p["metadata"].get("namespace") == ns)
            and (name is None or p["metadata"]["name"] == name)
        ]
        for pod in gone:
            del self.objects[PODS][(pod["metadata"].get("namespace", ""), pod["metadata"]["name"])]
            self.version += 1
        return len(gone)

    def advance(self, seconds: float) -> int:
        """Move the fake's clock; terminating pods whose grace period is over are removed (the
        kubelet kills what is left at the end of it). Returns how many went."""
        self.clock_offset += seconds
        now = iso(self.now())
        done = [p for p in self.terminating() if p["metadata"]["deletionTimestamp"] <= now]
        for pod in done:
            self.finish_termination(pod["metadata"].get("namespace", ""), pod["metadata"]["name"])
        return len(done)

    def _scale(self, ref: Obj, ns: str) -> int:
        """The scale of a pod's controller, as the disruption controller's finders read it."""
        api = str(ref.get("apiVersion", ""))
        group = api.rsplit("/", 1)[0] if "/" in api else ""
        res = SCALED.get((group, str(ref.get("kind"))))
        if res is None:
            raise ScaleError(f"{ref.get('kind')} does not implement the scale subresource")
        obj = self.objects.get(res, {}).get((ns, str(ref.get("name"))))
        if obj is None or obj["metadata"].get("uid") != ref.get("uid"):
            raise ScaleError(f"found no controllers for pod of {ref.get('kind')} {ref.get('name')}")
        above = next(
            (o for o in obj["metadata"].get("ownerReferences") or [] if o.get("controller")), None
        )
        if res[2] == "replicasets" and above is not None and above.get("kind") == "Deployment":
            return self._scale(above, ns)
        replicas = (obj.get("spec") or {}).get("replicas")
        return 1 if replicas is None else int(replicas)


def iso(t: float) -> str:
    return datetime.fromtimestamp(t, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def grace_period(pod: Obj, options: Any) -> int:
    """pod strategy `CheckGracefulDelete`: the options' period, else the pod's (default 30);
    0 for a pod bound to no node or one that has finished."""
    asked = options.get("gracePeriodSeconds") if isinstance(options, dict) else None
    spec = pod.get("spec") or {}
    period = asked if asked is not None else spec.get("terminationGracePeriodSeconds")
    period = DEFAULT_GRACE_S if period is None else int(period)
    phase = (pod.get("status") or {}).get("phase")
    if not spec.get("nodeName") or phase in ("Succeeded", "Failed"):
        return 0
    return max(0, period)
