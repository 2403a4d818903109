"""Leader election with a `coordination.k8s.io/v1` Lease, as client-go does it.

One replica holds the Lease and renews it every `retry_period_s`; the others keep trying. A
candidate judges expiry by its own monotonic clock, from when it last saw the Lease record
change (never by comparing the holder's `renewTime` with its own wall clock, so clock skew
between nodes cannot cause two leaders). The holder counts its lead from the *start* of its last
successful renew: `is_leader()` turns False once `renew_deadline_s` has passed without another
success, which is before any other replica can see the Lease expire (`lease_duration_s`). The
actuator asks `is_leader()` before every write. The Lease itself is always written for real,
also in dry-run: coordination must work before the first `--apply`.

Identity: the host name alone is not unique (hostNetwork pods, two processes on one VM, a pod
template that sets `hostname:`), and two replicas with one identity would both take the Lease as
"ours". `process_identity()` adds a random UUID, as kube-controller-manager does for client-go's
leader election (kubernetes/kubernetes, cmd/kube-controller-manager/app/controllermanager.go:
"add a uniquifier so that two processes on the same host don't accidentally both become
active"; `id = hostname + "_" + uuid`).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from reclaimer.kube.client import KubeApi, KubeError, call
from reclaimer.kube.objects import resources as r
from reclaimer.kube.write import rfc3339_micro

log = logging.getLogger(__name__)


def process_identity(hostname: str, unique: uuid.UUID) -> str:
    """Pure: this process's Lease identity, `<hostname>_<uuid>` (see the module docstring)."""
    return f"{hostname}_{unique}"


@dataclass(frozen=True)
class LeaseConfig:
    identity: str  # unique per process: process_identity(), never the host name alone
    name: str = "gpu-reclaimer"
    namespace: str = "gpu-reclaim"
    lease_duration_s: float = 15.0
    renew_deadline_s: float = 10.0
    retry_period_s: float = 2.0

    def __post_init__(self) -> None:
        if not 0 < self.retry_period_s < self.renew_deadline_s < self.lease_duration_s:
            raise ValueError("need 0 < retry_period_s < renew_deadline_s < lease_duration_s")


def record_of(lease: dict[str, Any] | None) -> tuple[str, str, str]:
    """What identifies one renewal: (holder, renewTime, resourceVersion)."""
    if lease is None:
        return ("", "", "")
    spec = lease.get("spec") or {}
    meta = lease.get("metadata") or {}
    return (
        str(spec.get("holderIdentity") or ""),
        str(spec.get("renewTime") or ""),
        str(meta.get("resourceVersion") or ""),
    )


def may_take(holder: str, identity: str, observed_at: float, now: float, duration: float) -> bool:
    """Pure: may `identity` write the Lease? Free, ours, or unchanged for a whole duration."""
    return holder in ("", identity) or now >= observed_at + duration


def _path(c: LeaseConfig) -> tuple[str, str, str, str]:
    # Leases go through the generic object API: the typed CoordinationV1Api would re-encode
    # the body through its model and drop the microseconds MicroTime fields must carry.
    return r.LEASES.group, r.LEASES.version, c.namespace, r.LEASES.plural


class LeaderElector:
    """Acquire/renew (`try_acquire_or_renew`), check (`is_leader`), give up (`release`)."""

    def __init__(
        self,
        api: KubeApi,
        config: LeaseConfig,
        *,
        wall: Callable[[], float],
        monotonic: Callable[[], float],
    ) -> None:
        self.api, self.config, self.wall, self.monotonic = api, config, wall, monotonic
        self._deadline: float | None = None
        self._observed: tuple[str, str, str] | None = None
        self._observed_at = 0.0
        self._standing_by_for = ""  # the holder last logged as leading instead of us
        self.problem = ""  # why the last attempt did not lead (holder, or the API's answer)

    def is_leader(self) -> bool:
        """True only while the last successful renew is younger than the renew deadline."""
        return self._deadline is not None and self.monotonic() < self._deadline

    def _read(self) -> dict[str, Any] | None:
        c = self.config
        try:
            lease: dict[str, Any] = call(
                self.api, self.api.custom.get_namespaced_custom_object, *_path(c), c.name
            )
        except KubeError as exc:
            if exc.status == 404:
                return None
            raise
        return lease

    def _spec(self, current: dict[str, Any] | None, now_wall: float) -> dict[str, Any]:
        c = self.config
        spec = dict((current or {}).get("spec") or {})
        ours = spec.get("holderIdentity") == c.identity
        transitions = int(spec.get("leaseTransitions") or 0)
        return {
            "holderIdentity": c.identity,
            "leaseDurationSeconds": max(1, round(c.lease_duration_s)),
            "acquireTime": spec.get("acquireTime") if ours else rfc3339_micro(now_wall),
            "renewTime": rfc3339_micro(now_wall),
            "leaseTransitions": transitions if ours or current is None else transitions + 1,
        }

    def try_acquire_or_renew(self) -> bool:
        """One attempt (blocking). Returns whether this replica leads now; never raises."""
        c = self.config
        started = self.monotonic()
        try:
            current = self._read()
            record = record_of(current)
            if record != self._observed:
                self._observed, self._observed_at = record, started
            if not may_take(record[0], c.identity, self._observed_at, started, c.lease_duration_s):
                self._deadline = None
                self.problem = f"Lease {c.namespace}/{c.name} is held by {record[0]}"
                if record[0] != self._standing_by_for:
                    self._standing_by_for = record[0]
                    log.info("%s; %s stands by", self.problem, c.identity)
                return False
            meta: dict[str, str] = {"name": c.name, "namespace": c.namespace}
            body = {
                "apiVersion": r.LEASES.api_version,
                "kind": r.LEASES.kind,
                "metadata": meta,
                "spec": self._spec(current, self.wall()),
            }
            custom = self.api.custom
            if current is None:
                written = call(self.api, custom.create_namespaced_custom_object, *_path(c), body)
            else:
                meta["resourceVersion"] = record[2]
                written = call(
                    self.api, custom.replace_namespaced_custom_object, *_path(c), c.name, body
                )
        except KubeError as exc:
            # 409: another replica wrote first. Others: keep the lead only until the deadline.
            log.info("lease %s/%s: %s", c.namespace, c.name, exc)
            if exc.status == 409:
                self._deadline = None
            self.problem = f"Lease {c.namespace}/{c.name} not written: {exc}"
            return self.is_leader()
        self._observed, self._observed_at = record_of(written), started
        if self._deadline is None:
            log.info("lease %s/%s acquired by %s", c.namespace, c.name, c.identity)
        self._standing_by_for = ""
        self._deadline = started + c.renew_deadline_s
        self.problem = ""
        return True

    def release(self) -> None:
        """Give the Lease up at shutdown so another replica takes over at once. Never raises."""
        c = self.config
        held = self._deadline is not None
        self._deadline = None
        if not held:
            return
        try:
            current = self._read()
            if current is None or record_of(current)[0] != c.identity:
                return
            spec = {
                **(current.get("spec") or {}),
                "holderIdentity": None,
                "leaseDurationSeconds": 1,
                "renewTime": rfc3339_micro(self.wall()),
            }
            body = {**current, "spec": spec}
            replace = self.api.custom.replace_namespaced_custom_object
            call(self.api, replace, *_path(c), c.name, body)
            log.info("lease %s/%s released by %s", c.namespace, c.name, c.identity)
        except KubeError as exc:
            log.warning("lease %s/%s not released: %s", c.namespace, c.name, exc)

    async def run(self, stop: asyncio.Event) -> None:
        """Keep trying/renewing every retry period until `stop` is set; then release."""
        try:
            while not stop.is_set():
                await asyncio.to_thread(self.try_acquire_or_renew)
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(stop.wait(), self.config.retry_period_s)
        finally:
            await asyncio.to_thread(self.release)
