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
import threading
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any, Protocol

from exporter.node.apiserver import ApiEndpoint, ApiServerError, list_node_pages
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


class KubernetesResourceSlices:
    """The node's ResourceSlices from the API server, listed by a daemon thread once wanted.

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
        self._node = node_name
        self._endpoint = endpoint
        self._refresh = refresh_seconds
        self._min_gap = min_gap_seconds
        self._timeout = request_timeout
        self._page_limit = page_limit
        self._versions: tuple[str, ...] = VERSIONS
        self._lock = threading.Lock()
        self._uuids: DeviceUuids | None = None
        self._ok = False
        self._errors = 0
        self._failing = False
        self._last_attempt = float("-inf")
        self._wanted = threading.Event()  # set by the first DRA device attribution meets
        self._wake = threading.Event()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="slices-refresh", daemon=True)
        if start:
            self._thread.start()

    def lookup(self) -> SliceLookup:
        with self._lock:
            errors, self._errors = self._errors, 0
            return SliceLookup(self._uuids, self._ok, errors)

    def want(self, keys: Iterable[DeviceKey]) -> None:
        """Attribution met these DRA devices: list now if one is not known yet."""
        self._wanted.set()
        known = self._uuids or {}
        if any(k not in known for k in keys) and (
            time.monotonic() - self._last_attempt >= self._min_gap
        ):
            self._wake.set()

    def close(self) -> None:
        self._stop.set()
        self._wanted.set()
        self._wake.set()
        if self._thread.is_alive():
            self._thread.join(timeout=self._timeout + 1)

    def refresh(self) -> None:
        """One blocking list (all pages); public so tests can drive it synchronously."""
        self._last_attempt = time.monotonic()
        try:
            uuids = self._list()
        except Exception as exc:  # HTTP, TLS, token, odd JSON: degrade, never kill the thread
            level = logging.DEBUG if self._failing else logging.WARNING
            log.log(level, "listing ResourceSlices of node %s failed: %s", self._node, exc)
            with self._lock:
                self._ok, self._failing = False, True
                self._errors += 1
            return
        if self._failing:
            log.info("listing ResourceSlices of node %s works again", self._node)
        with self._lock:
            self._uuids, self._ok, self._failing = uuids, True, False

    def _list(self) -> DeviceUuids:
        if self._endpoint is None:
            raise ApiServerError(
                "no API server: KUBERNETES_SERVICE_HOST/PORT unset and no --kubernetes.api-url"
            )
        for i, version in enumerate(self._versions):
            try:
                pages = list_node_pages(
                    self._endpoint,
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

    def _run(self) -> None:
        self._wanted.wait()
        while not self._stop.is_set():
            self._wake.clear()  # a want that came before this list is answered by it
            self.refresh()
            self._wake.wait(self._refresh)
