"""Pod UID -> namespace/name (and container id -> container name) for the pods of this node.

`/proc/<pid>/cgroup` names a process's pod by UID, while PodResources names allocations by
namespace/name, so attribution needs the node's pods to join the two. On a real node
`KubernetesPods` lists them from the API server (`exporter.node.apiserver`: plain HTTPS, standard
library, paged) in a background thread: every `refresh_seconds`, and sooner when attribution
meets a UID it does not know. Lookups never block; they read the last good index. When the API
is unavailable the index is absent and attribution falls back to devices held by a single pod.
The `sim`/`replay` backends provide a JSON fixture instead (`PodsFile`).
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from types import MappingProxyType
from typing import Any, Protocol

from exporter.node.apiserver import ApiEndpoint, list_pod_pages
from exporter.node.refresh import NodeListRefresher
from exporter.sources import PodIdentity, PodIndex

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class PodLookup:
    """What a pod source knows now: its index (None if never loaded) and its health."""

    index: PodIndex | None
    ok: bool
    new_errors: int = 0  # failed calls since the previous lookup


class PodSource(Protocol):
    def lookup(self) -> PodLookup:
        """Non-blocking for the API source; a file read for the fixture source."""
        ...

    def want(self, uids: Iterable[str]) -> None:
        """Hint: attribution met these UIDs; refresh soon if any is unknown."""
        ...

    def close(self) -> None: ...


def parse_pod_pages(pages: Iterable[Mapping[str, Any]]) -> PodIndex:
    """The index of a paged `PodList`, taking each page as it comes (memory stays at one page)."""
    by_uid: dict[str, PodIdentity] = {}
    containers: dict[str, str] = {}
    for page in pages:
        _add_pod_list(page, by_uid, containers)
    return PodIndex(MappingProxyType(by_uid), MappingProxyType(containers))


def _add_pod_list(
    data: Mapping[str, Any], by_uid: dict[str, PodIdentity], containers: dict[str, str]
) -> None:
    """Add one `PodList` page's pods to the index being built; reads only the fields it needs.

    Raises ValueError when `items` is not a list of objects (not a `PodList`)."""
    items = data.get("items") or []
    if not isinstance(items, list) or not all(isinstance(i, dict) for i in items):
        raise ValueError("not a PodList: items is not a list of objects")
    for item in items:
        meta = item.get("metadata") or {}
        uid = meta.get("uid")
        if not uid:
            continue
        by_uid[uid] = PodIdentity(uid, meta.get("namespace", ""), meta.get("name", ""))
        status = item.get("status") or {}
        for key in ("containerStatuses", "initContainerStatuses"):
            for cs in status.get(key) or ():
                cid = cs.get("containerID") or ""
                if "://" in cid:
                    containers[cid.split("://", 1)[1]] = cs.get("name", "")


def parse_pods_json(text: str) -> PodIndex:
    """Pure: a fixture file (a JSON list of `PodIdentity` fields)."""
    rows = json.loads(text)
    pods = {
        str(r["uid"]): PodIdentity(str(r["uid"]), str(r["namespace"]), str(r["name"])) for r in rows
    }
    return PodIndex(MappingProxyType(pods))


class PodsFile:
    """The sim/replay fixture, re-parsed only when the file changes."""

    def __init__(self, path: Path) -> None:
        self._path = path
        self._stamp: tuple[int, int, int] | None = None
        self._index: PodIndex | None = None

    def lookup(self) -> PodLookup:
        try:
            st = self._path.stat()
            stamp = (st.st_ino, st.st_mtime_ns, st.st_size)
            if stamp != self._stamp:
                self._index = parse_pods_json(self._path.read_text())
                self._stamp = stamp
        except (OSError, ValueError, KeyError, TypeError) as exc:
            log.warning("cannot read pods fixture %s: %s", self._path, exc)
            return PodLookup(self._index, ok=False, new_errors=1)
        return PodLookup(self._index, ok=True)

    def want(self, uids: Iterable[str]) -> None:
        pass

    def close(self) -> None:
        pass


class KubernetesPods(NodeListRefresher[PodIndex]):
    """The node's pods from the API server, refreshed by a daemon thread (`node.refresh`).

    `endpoint` None means no API server is known (not in a cluster, no `--kubernetes.api-url`):
    every refresh then fails and is counted like any other failed list.
    """

    def __init__(
        self,
        node_name: str,
        endpoint: ApiEndpoint | None,
        *,
        refresh_seconds: float = 30.0,
        min_gap_seconds: float = 2.0,
        request_timeout: float = 10.0,
        page_limit: int = 500,
        start: bool = True,
    ) -> None:
        self._page_limit = page_limit
        super().__init__(
            node_name,
            endpoint,
            what="pods",
            log=log,
            refresh_seconds=refresh_seconds,
            min_gap_seconds=min_gap_seconds,
            request_timeout=request_timeout,
            start=start,
        )

    def lookup(self) -> PodLookup:
        return PodLookup(*self.health())

    def want(self, uids: Iterable[str]) -> None:
        known = self.value.by_uid if self.value is not None else {}
        self.wake(any(uid not in known for uid in uids))

    def refresh(self) -> None:
        """One blocking list (all pages); public so tests can drive it synchronously."""
        self.refresh_with(self._list)

    def _list(self, endpoint: ApiEndpoint) -> PodIndex:
        pages = list_pod_pages(
            endpoint, self._node, timeout=self._timeout, page_limit=self._page_limit
        )
        return parse_pod_pages(pages)
