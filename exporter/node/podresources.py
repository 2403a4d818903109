"""Which containers the kubelet allocated which GPUs to: PodResources v1 `List`, or a fixture.

On a node the kubelet serves `v1.PodResourcesLister/List` on a unix socket. We call it as a
generic gRPC unary method (grpcio, imported lazily) and decode `ListPodResourcesResponse` with the
small protobuf wire reader below, so no generated code and no `protobuf` package are needed:

    ListPodResourcesResponse { repeated PodResources pod_resources = 1; }
    PodResources       { string name = 1; string namespace = 2;
                         repeated ContainerResources containers = 3; }
    ContainerResources { string name = 1; repeated ContainerDevices devices = 2; ...
                         repeated DynamicResource dynamic_resources = 5; }
    ContainerDevices   { string resource_name = 1; repeated string device_ids = 2; ... }
    DynamicResource    { string claim_name = 2; string claim_namespace = 3;
                         repeated ClaimResource claim_resources = 4; }
    ClaimResource      { repeated CDIDevice cdi_devices = 1; string driver_name = 2;
                         string pool_name = 3; string device_name = 4; string share_id = 5; }

(kubernetes/kubernetes, staging/src/k8s.io/kubelet/pkg/apis/podresources/v1/api.proto; field 1
of DynamicResource, `class_name`, was removed in 1.31. `share_id`, field 5, is newer than that
file: kubelets that share a device by consumable capacity add it; others leave it unset.)
Of the device plugins' resources only NVIDIA GPU ones are kept (`nvidia.com/gpu`,
`nvidia.com/gpu.shared`, `nvidia.com/mig-*`). Every DRA device is kept (`Allocation.claim`),
whatever its driver: whether it is a GPU is known only from the node's ResourceSlices (a device
with a `uuid` NVML knows), so `exporter.claims` decides that.
The `sim` and `replay` backends write the same allocations as a JSON fixture instead
(`AllocationsFile`), which then flows through the same attribution code.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Protocol

from exporter.sources import Allocation, ClaimDevice

LIST_METHOD = "/v1.PodResourcesLister/List"
DEFAULT_SOCKET = Path("/var/lib/kubelet/pod-resources/kubelet.sock")
_MAX_MESSAGE = 64 * 1024 * 1024


class PodResourcesError(Exception):
    """The allocations could not be read (socket missing, RPC failed, bad message)."""


class AllocationSource(Protocol):
    def list(self) -> tuple[Allocation, ...]:
        """Blocking; raises PodResourcesError."""
        ...

    def close(self) -> None: ...


def is_gpu_resource(name: str) -> bool:
    return name == "nvidia.com/gpu" or name.startswith(("nvidia.com/gpu.", "nvidia.com/mig-"))


# --- protobuf wire format (the subset proto3 messages use) -------------------------------------


def _varint(buf: bytes, pos: int) -> tuple[int, int]:
    result = shift = 0
    while True:
        if pos >= len(buf):
            raise PodResourcesError("truncated varint")
        byte = buf[pos]
        pos += 1
        result |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return result, pos
        shift += 7
        if shift > 63:
            raise PodResourcesError("varint too long")


def _fields(buf: bytes) -> Iterator[tuple[int, int, int | bytes]]:
    """Yield (field number, wire type, value): ints for varint/fixed, bytes for length-delimited."""
    pos = 0
    while pos < len(buf):
        key, pos = _varint(buf, pos)
        number, wire = key >> 3, key & 7
        value: int | bytes
        if wire == 0:
            value, pos = _varint(buf, pos)
        elif wire == 1:
            value, pos = int.from_bytes(buf[pos : pos + 8], "little"), pos + 8
        elif wire == 2:
            size, pos = _varint(buf, pos)
            if pos + size > len(buf):
                raise PodResourcesError("truncated length-delimited field")
            value, pos = buf[pos : pos + size], pos + size
        elif wire == 5:
            value, pos = int.from_bytes(buf[pos : pos + 4], "little"), pos + 4
        else:
            raise PodResourcesError(f"unsupported wire type {wire}")
        if pos > len(buf):
            raise PodResourcesError("truncated fixed-width field")
        yield number, wire, value


def _text(value: int | bytes) -> str:
    if not isinstance(value, bytes):
        raise PodResourcesError("expected a string field")
    return value.decode("utf-8", errors="replace")


def _message(value: int | bytes) -> bytes:
    if not isinstance(value, bytes):
        raise PodResourcesError("expected a message field")
    return value


def _devices(buf: bytes) -> tuple[str, tuple[str, ...]]:
    resource, ids = "", []
    for number, _, value in _fields(buf):
        if number == 1:
            resource = _text(value)
        elif number == 2:
            ids.append(_text(value))
    return resource, tuple(ids)


def _claim_devices(buf: bytes) -> Iterator[ClaimDevice]:
    """The devices of one `DynamicResource` (one claim); a resource without a device name is
    not a device (api.proto: other kinds of DRA resources would leave it empty)."""
    name = namespace = ""
    resources: list[bytes] = []
    for number, _, value in _fields(buf):
        if number == 2:
            name = _text(value)
        elif number == 3:
            namespace = _text(value)
        elif number == 4:
            resources.append(_message(value))
    for resource in resources:
        fields: dict[int, str] = {}
        for number, _, value in _fields(resource):
            if number in (2, 3, 4, 5):
                fields[number] = _text(value)
        if fields.get(4):
            yield ClaimDevice(
                namespace, name, fields.get(2, ""), fields.get(3, ""), fields[4], fields.get(5)
            )


def _container(namespace: str, pod: str, buf: bytes) -> Iterator[Allocation]:
    cname = ""
    devices: list[tuple[str, tuple[str, ...]]] = []
    claims: list[ClaimDevice] = []
    for number, _, value in _fields(buf):
        if number == 1:
            cname = _text(value)
        elif number == 2:
            devices.append(_devices(_message(value)))
        elif number == 5:
            claims.extend(_claim_devices(_message(value)))
    for resource, ids in devices:
        if is_gpu_resource(resource) and ids:
            yield Allocation(namespace, pod, cname, resource, ids)
    for claim in claims:
        yield Allocation(namespace, pod, cname, claim.driver, (), claim)


def _pod(buf: bytes) -> Iterator[Allocation]:
    name = namespace = ""
    containers: list[bytes] = []
    for number, _, value in _fields(buf):
        if number == 1:
            name = _text(value)
        elif number == 2:
            namespace = _text(value)
        elif number == 3:
            containers.append(_message(value))
    for container in containers:
        yield from _container(namespace, name, container)


def decode_list_response(data: bytes) -> tuple[Allocation, ...]:
    """Pure: the GPU allocations in a serialized `ListPodResourcesResponse`."""
    out: list[Allocation] = []
    for number, _, value in _fields(data):
        if number == 1:
            out.extend(_pod(_message(value)))
    return tuple(out)


# --- sources ------------------------------------------------------------------------------------


class PodResourcesClient:
    """`List` over the kubelet's unix socket. The channel is made on first use and reused."""

    def __init__(self, socket_path: Path = DEFAULT_SOCKET, timeout: float = 2.0) -> None:
        self._socket = socket_path
        self._timeout = timeout
        self._channel: Any = None
        self._call: Any = None

    def list(self) -> tuple[Allocation, ...]:
        if not self._socket.exists():
            raise PodResourcesError(f"kubelet PodResources socket {self._socket} does not exist")
        import grpc  # noqa: PLC0415 (lazy: only real nodes pay for grpcio)

        if self._call is None:
            self._channel = grpc.insecure_channel(
                f"unix://{self._socket.absolute()}",
                options=[("grpc.max_receive_message_length", _MAX_MESSAGE)],
            )
            self._call = self._channel.unary_unary(
                LIST_METHOD,
                request_serializer=lambda _request: b"",  # ListPodResourcesRequest is empty
                response_deserializer=decode_list_response,
            )
        try:
            result: tuple[Allocation, ...] = self._call(None, timeout=self._timeout)
        except grpc.RpcError as exc:
            raise PodResourcesError(f"PodResources List failed: {exc}") from exc
        return result

    def close(self) -> None:
        if self._channel is not None:
            self._channel.close()
            self._channel = self._call = None


def parse_allocations_json(text: str) -> tuple[Allocation, ...]:
    """Pure: a fixture file's allocations (a JSON list of `Allocation` fields)."""
    try:
        rows = json.loads(text)
        return tuple(
            Allocation(
                namespace=str(r["namespace"]),
                pod=str(r["pod"]),
                container=str(r["container"]),
                resource_name=str(r["resource_name"]),
                device_ids=tuple(str(d) for d in r["device_ids"]),
                claim=_claim_json(r.get("claim")),
            )
            for r in rows
            if is_gpu_resource(str(r["resource_name"])) or r.get("claim")
        )
    except (ValueError, KeyError, TypeError, AttributeError) as exc:
        raise PodResourcesError(f"bad allocations fixture: {exc}") from exc


def _claim_json(row: Any) -> ClaimDevice | None:
    """A fixture row's DRA device: an object with `ClaimDevice`'s field names, or absent."""
    if row is None:
        return None
    share = row.get("share_id")
    return ClaimDevice(
        str(row["claim_namespace"]),
        str(row["claim_name"]),
        str(row["driver"]),
        str(row["pool"]),
        str(row["device"]),
        None if share is None else str(share),
    )


class AllocationsFile:
    """A fixture written by the sim/replay backends; re-parsed only when the file changes."""

    def __init__(self, path: Path) -> None:
        self._path = path
        self._stamp: tuple[int, int, int] | None = None
        self._cached: tuple[Allocation, ...] = ()

    def list(self) -> tuple[Allocation, ...]:
        try:
            stat = self._path.stat()
            stamp = (stat.st_ino, stat.st_mtime_ns, stat.st_size)
            if stamp != self._stamp:
                self._cached = parse_allocations_json(self._path.read_text())
                self._stamp = stamp
        except OSError as exc:
            raise PodResourcesError(f"cannot read {self._path}: {exc}") from exc
        return self._cached

    def close(self) -> None:
        pass
