"""A node-scoped list from the API server, kept fresh by a daemon thread: the pods of the node
(`node.pods`) and its ResourceSlices (`node.resourceslices`) share it.

The thread lists every `refresh_seconds`, and at once when attribution meets something the last
list did not know (`wake`), but never sooner than `min_gap_seconds` after the last attempt, so a
thing the server never lists cannot hammer it. A source started `wanted=False` lists nothing
until its first `wake` (a node without DRA devices never asks for slices). A failed list keeps
the last good value, counts the failure for the self-metric and logs a warning when listing
starts failing (debug while it keeps failing, info once it works again); it never kills the
thread.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from typing import Generic, TypeVar

from exporter.node.apiserver import ApiEndpoint, ApiServerError

T = TypeVar("T")


class NodeListRefresher(Generic[T]):
    """The last good list (`value`, None if never loaded), its health, and the thread."""

    def __init__(
        self,
        node_name: str,
        endpoint: ApiEndpoint | None,
        *,
        what: str,  # for the logs: "pods", "ResourceSlices"
        log: logging.Logger,  # the source's own module logger
        refresh_seconds: float,
        min_gap_seconds: float,
        request_timeout: float,
        start: bool,
        wanted: bool = True,
    ) -> None:
        self._node = node_name
        self._endpoint = endpoint
        self._what, self._log = what, log
        self._refresh = refresh_seconds
        self._min_gap = min_gap_seconds
        self._timeout = request_timeout
        self._lock = threading.Lock()
        self.value: T | None = None
        self._ok = False
        self._errors = 0
        self._failing = False
        self._last_attempt = float("-inf")
        self._wanted = threading.Event()
        if wanted:
            self._wanted.set()
        self._wake = threading.Event()
        self._stop = threading.Event()
        thread_name = f"{what.lower()}-refresh"
        self._thread = threading.Thread(target=self._run, name=thread_name, daemon=True)
        if start:
            self._thread.start()

    def health(self) -> tuple[T | None, bool, int]:
        """(last good value, whether the last list worked, failed lists since the last call)."""
        with self._lock:
            errors, self._errors = self._errors, 0
            return self.value, self._ok, errors

    def wake(self, unknown: bool) -> None:
        """Attribution met something: list now if it is `unknown` and the gap allows."""
        self._wanted.set()
        if unknown and time.monotonic() - self._last_attempt >= self._min_gap:
            self._wake.set()

    def close(self) -> None:
        self._stop.set()
        self._wanted.set()
        self._wake.set()
        if self._thread.is_alive():
            self._thread.join(timeout=self._timeout + 1)

    def refresh_with(self, list_once: Callable[[ApiEndpoint], T]) -> None:
        """One blocking list through `list_once` (all pages)."""
        self._last_attempt = time.monotonic()
        try:
            if self._endpoint is None:
                raise ApiServerError(
                    "no API server: KUBERNETES_SERVICE_HOST/PORT unset and no --kubernetes.api-url"
                )
            value = list_once(self._endpoint)
        except Exception as exc:  # HTTP, TLS, token, odd JSON: degrade, never kill the thread
            level = logging.DEBUG if self._failing else logging.WARNING
            self._log.log(level, "listing %s of node %s failed: %s", self._what, self._node, exc)
            with self._lock:
                self._ok, self._failing = False, True
                self._errors += 1
            return
        if self._failing:
            self._log.info("listing %s of node %s works again", self._what, self._node)
        with self._lock:
            self.value, self._ok, self._failing = value, True, False

    def refresh(self) -> None:
        raise NotImplementedError

    def _run(self) -> None:
        self._wanted.wait()
        while not self._stop.is_set():
            self._wake.clear()  # a wake that came before this list is answered by it
            self.refresh()
            self._wake.wait(self._refresh)
