"""What a test sees of the fake API server's requests, and what it makes them answer.

Every request is logged as a `Recorded` before the store answers it, and the store fills in how it
answered (the object it named before, the HTTP code, the answer to a write). A `Fault` a test
injects (`FakeCluster.inject`) makes the next matching requests answer otherwise: another status,
late, trickling, throttled, or stored and then answered as failed; `fakeapi.server` carries
them out.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any


@dataclass
class Recorded:
    """One request as it came, and (once answered by the store) how: the stored object it
    named before (`old`, for PUT/PATCH/DELETE), the HTTP code and, for a write, the answer."""

    method: str
    path: str
    query: dict[str, list[str]]
    body: Any
    content_type: str
    old: Any = None
    code: int = 0
    answer: Any = None

    @property
    def dry_run(self) -> bool:
        in_body = isinstance(self.body, dict) and "All" in (
            (self.body.get("deleteOptions") or {}).get("dryRun") or self.body.get("dryRun") or []
        )
        return "All" in self.query.get("dryRun", []) or in_body


NEVER_S = 3600.0  # a delay no test outlasts: the answer comes only when the server stops


@dataclass
class Fault:
    """The next `times` requests matching method and path regex answer `status` (after `delay`).

    `status=None` answers what the store would. `trickle` > 0 sends the answer's body one byte
    every `trickle` seconds after the status line and headers: a stalled answer whose bytes keep
    coming, which a client's per-read socket timeout never ends (an API server or proxy under
    load, a half-dead connection through a load balancer).
    With `retry_after`, the answer is kube-apiserver's throttling one instead (see server.py).
    `store` (with a `status`): the request is carried out first (stored), then answered
    `status` anyway, as a kube-apiserver answers 504 when etcd commits after the request's
    deadline, or as a client that timed out (a `delay`) never hears the 201. `before`: called
    first (a test kills the client process there, to stop it at exactly this request).
    A `delay` of `NEVER_S` holds the answer until the server stops: a test that wants the
    client to time out uses it, so that a busy machine cannot deliver the answer in time.
    """

    method: str | None
    path: str
    status: int | None = 500
    delay: float = 0.0
    times: int = 1
    trickle: float = 0.0
    retry_after: str | None = None
    store: bool = False
    before: Callable[[], object] | None = None

    def matches(self, method: str, path: str) -> bool:
        return (self.method is None or self.method == method) and re.search(
            self.path, path
        ) is not None


class RequestFaults:
    """Mixed into `FakeCluster`: its request log and the faults pending."""

    requests: list[Recorded]
    faults: list[Fault]

    def inject(
        self,
        method: str | None,
        path: str,
        status: int | None = 500,
        *,
        delay: float = 0.0,
        times: int = 1,
        trickle: float = 0.0,
        retry_after: str | None = None,
        store: bool = False,
        before: Callable[[], object] | None = None,
    ) -> None:
        self.faults.append(
            Fault(method, path, status, delay, times, trickle, retry_after, store, before)
        )

    def writes(self) -> list[Recorded]:
        return [r for r in self.requests if r.method in ("POST", "PUT", "PATCH", "DELETE")]

    def take_fault(self, method: str, path: str) -> Fault | None:
        for fault in self.faults:
            if fault.times > 0 and fault.matches(method, path):
                fault.times -= 1
                return fault
        return None
