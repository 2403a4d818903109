"""The node's DRA devices by driver, pool and name -> UUID, from its ResourceSlices.

PodResources names a device allocated through Dynamic Resource Allocation by driver, pool and
device, never by UUID. The driver publishes each device of the node in a ResourceSlice
(`resource.k8s.io/v1`, kubernetes/kubernetes staging/src/k8s.io/api/resource/v1/types.go):
`spec.driver`, `spec.pool {name, generation}`, `spec.nodeName`, `spec.devices[] {name,
attributes}`, an attribute being `{"string": ...}` (or `int`, `bool`, `version`). NVIDIA's
driver (kubernetes-sigs/dra-driver-nvidia-gpu, cmd/gpu-kubelet-plugin/deviceinfo.go) gives a
whole GPU the attribute `uuid` (`GPU-...`) and a MIG device its own `uuid` (`MIG-...`) beside
`parentUUID` and `profile`: the UUIDs NVML reports, so that is the join.

`KubernetesResourceSlices` lists them with `fieldSelector=spec.nodeName=<node>` (a field the API
server indexes for ResourceSlices, beside `spec.driver` and `metadata.name`), paged, in a
background thread, and only once attribution has met a DRA device: a node without DRA never
calls the API for them. It lists again every `refresh_seconds` and sooner when attribution meets
a device it does not know (a driver that just published). A server older than 1.34 lacks `v1`:
it answers 404 and the next version is tried (`v1beta2`, then `v1beta1`, whose devices keep
their attributes under `basic`). Lookups never block. Within a pool only the slices of its
newest `generation` count, as the scheduler reads them (an older one is on its way out).
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any, Protocol

from exporter.node.apiserver import ApiEndpoint, ApiServerError, list_node_pages
from exporter.node.refresh import NodeListRefresher
from exporter.sources import DeviceKey, DeviceUuids

log = logging.getLogger(__name__)

VERSIONS = ("v1", "v1beta2", "v1beta1")  # newest first; 1.32-1.33 serve only the betas


def slices_path(version: str) -> str:
    return f"/apis/resource.k8s.io/{version}/resourceslices"


@dataclass(frozen=True)
class SliceLookup:
    """What the slice source knows now: its index (None if never loaded) and its health."""

    uuids: DeviceUuids | None
    ok: bool
    new_errors: int = 0  # failed lists since the previous lookup


class SliceSource(Protocol):
    def lookup(self) -> SliceLookup:
        """Non-blocking: the last good index and how the lists fared since the last lookup."""
        ...

    def want(self, keys: Iterable[DeviceKey]) -> None:
        """Attribution met these DRA devices; list soon if one is unknown."""
        ...

    def close(self) -> None: ...


def _uuid(driver: str, device: Mapping[str, Any]) -> str | None:
    """A device's `uuid` attribute. v1 and v1beta2 keep attributes on the device, v1beta1 under
    `basic`; a name without a domain is in the driver's own, so `<driver>/uuid` is the same."""
    attributes = device.get("attributes")
    if attributes is None:
        attributes = (device.get("basic") or {}).get("attributes")
    if not isinstance(attributes, dict):
        return None
    value = attributes.get("uuid", attributes.get(f"{driver}/uuid"))
    text = value.get("string") if isinstance(value, dict) else None
    return text if isinstance(text, str) and text else None


def parse_slice_pages(pages: Iterable[Mapping[str, Any]]) -> DeviceUuids:
    """Pure: every device of the listed slices, (driver, pool, name) -> its UUID (None without
    one), counting per pool only the slices of its newest generation.

    Raises ValueError when a page's `items` is not a list of objects."""
    newest: dict[tuple[str, str], int] = {}
    found: dict[tuple[str, str], dict[DeviceKey, str | None]] = {}
    for page in pages:
        items = page.get("items") or []
        if not isinstance(items, list) or not all(isinstance(i, dict) for i in items):
            raise ValueError("not a ResourceSliceList: items is not a list of objects")
        for item in items:
            spec = item.get("spec") or {}
            driver = str(spec.get("driver") or "")
            pool = spec.get("pool") or {}
            name, generation = str(pool.get("name") or ""), int(pool.get("generation") or 0)
            key = (driver, name)
            if generation < newest.get(key, generation):
                continue
            if generation > newest.get(key, generation):
                found.pop(key, None)
            newest[key] = generation
            devices = found.setdefault(key, {})
            for device in spec.get("devices") or ():
                if isinstance(device, dict) and device.get("name"):
                    devices[(driver, name, str(device["name"]))] = _uuid(driver, device)
    return MappingProxyType({k: v for devices in found.values() for k, v in devices.items()})


class KubernetesResourceSlices(NodeListRefresher[DeviceUuids]):
    """The node's ResourceSlices from the API server, listed by a daemon thread once wanted
    (`node.refresh`).

    `endpoint` None means no API server is known: every list then fails and is counted."""

    def __init__(
        self,
        node_name: str,
        endpoint: ApiEndpoint | None,
        *,
        refresh_seconds: float = 60.0,
        min_gap_seconds: float = 10.0,  # a device never published must not hammer the API
        request_timeout: float = 10.0,
        page_limit: int = 500,
        start: bool = True,
    ) -> None:
        self._page_limit = page_limit
        self._versions: tuple[str, ...] = VERSIONS
        super().__init__(
            node_name,
            endpoint,
            what="ResourceSlices",
            log=log,
            refresh_seconds=refresh_seconds,
            min_gap_seconds=min_gap_seconds,
            request_timeout=request_timeout,
            start=start,
            wanted=False,  # set by the first DRA device attribution meets
        )

    def lookup(self) -> SliceLookup:
        return SliceLookup(*self.health())

    def want(self, keys: Iterable[DeviceKey]) -> None:
        """Attribution met these DRA devices: list now if one is not known yet."""
        known = self.value or {}
        self.wake(any(k not in known for k in keys))

    def refresh(self) -> None:
        """One blocking list (all pages); public so tests can drive it synchronously."""
        self.refresh_with(self._list)

    def _list(self, endpoint: ApiEndpoint) -> DeviceUuids:
        for i, version in enumerate(self._versions):
            try:
                pages = list_node_pages(
                    endpoint,
                    slices_path(version),
                    self._node,
                    timeout=self._timeout,
                    page_limit=self._page_limit,
                )
                uuids = parse_slice_pages(pages)
            except ApiServerError as exc:
                if exc.status != 404 or i == len(self._versions) - 1:
                    raise
                continue
            self._versions = self._versions[i:]  # remember the newest the server serves
            return uuids
        raise AssertionError("unreachable: the last version raises")
