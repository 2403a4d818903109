"""Pods on their way out, for the fake API server's store.

Deleting (or evicting) a pod is graceful, as kube-apiserver's pod strategy makes it
(pkg/registry/core/pod/strategy.go `CheckGracefulDelete`, then the generic registry's
`BeforeDelete`): the grace period is the delete options' `gracePeriodSeconds`, else the pod's
`spec.terminationGracePeriodSeconds` (defaulted to 30), and 0 for a pod on no node or one that
has finished. With a grace period the pod stays, Terminating: `metadata.deletionTimestamp` is set
to now plus the grace period and `deletionGracePeriodSeconds` to it, until the kubelet confirms it
is gone. Here the tests play the kubelet: `finish_termination` removes terminating pods, and
`advance` moves the fake's clock and removes those whose grace period is over.
"""

from __future__ import annotations

import time
from datetime import UTC, datetime
from typing import Any

Obj = dict[str, Any]
PODS = ("", "v1", "pods")
DEFAULT_GRACE_S = 30  # core/v1 defaults: DefaultTerminationGracePeriodSeconds


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
