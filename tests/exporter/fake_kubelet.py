"""A fake kubelet PodResources v1 server: a real gRPC server on a unix socket answering `List`
with bytes built by a minimal protobuf encoder, written independently of the exporter's decoder.

The messages follow kubernetes/kubernetes staging/src/k8s.io/kubelet/pkg/apis/podresources/v1/
api.proto: `ListPodResourcesResponse { repeated PodResources pod_resources = 1 }`, `PodResources
{ name = 1, namespace = 2, repeated ContainerResources containers = 3 }`, `ContainerResources
{ name = 1, repeated ContainerDevices devices = 2, cpu_ids = 3, memory = 4, repeated
DynamicResource dynamic_resources = 5 }`, `ContainerDevices { resource_name = 1, repeated
device_ids = 2, topology = 3 }`; DRA's messages are below. A kubelet sends `dynamic_resources`
by default since 1.34.
"""

from __future__ import annotations

from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from pathlib import Path

import grpc


def varint(value: int) -> bytes:
    out = bytearray()
    while True:
        low, value = value & 0x7F, value >> 7
        out.append(low | (0x80 if value else 0))
        if not value:
            return bytes(out)


def ld(number: int, payload: bytes) -> bytes:
    return varint(number << 3 | 2) + varint(len(payload)) + payload


def s(number: int, text: str) -> bytes:
    return ld(number, text.encode())


def devices(resource: str, ids: list[str], numa: int | None = None) -> bytes:
    body = s(1, resource) + b"".join(s(2, i) for i in ids)
    if numa is not None:  # TopologyInfo { repeated NUMANode nodes = 1 { int64 ID = 1 } }
        body += ld(3, ld(1, varint(1 << 3 | 0) + varint(numa)))
    return body


def claim_resource(driver: str, pool: str, device: str, share_id: str | None = None) -> bytes:
    """ClaimResource as api.proto (kubernetes/kubernetes, staging/src/k8s.io/kubelet/pkg/apis/
    podresources/v1) has it: cdi_devices = 1 (CDIDevice { name = 1 }), driver_name = 2,
    pool_name = 3, device_name = 4; share_id = 5 where the kubelet shares by capacity."""
    body = ld(1, s(1, f"k8s.{driver}/gpu=claim-{device}")) + s(2, driver) + s(3, pool)
    body += s(4, device)
    return body + (s(5, share_id) if share_id is not None else b"")


def dynamic(claim: str, namespace: str, resources: list[bytes]) -> bytes:
    """ContainerResources.dynamic_resources = 5: DynamicResource { claim_name = 2,
    claim_namespace = 3, repeated ClaimResource claim_resources = 4 } (1, class_name, is gone)."""
    return ld(5, s(2, claim) + s(3, namespace) + b"".join(ld(4, r) for r in resources))


def container(name: str, devs: list[bytes], extras: bytes = b"") -> bytes:
    return s(1, name) + b"".join(ld(2, d) for d in devs) + extras


def pod(name: str, namespace: str, containers: list[bytes]) -> bytes:
    return s(1, name) + s(2, namespace) + b"".join(ld(3, c) for c in containers)


def response(pods: list[bytes]) -> bytes:
    return b"".join(ld(1, p) for p in pods)


@contextmanager
def serve_kubelet(sock: Path, replies: list[bytes]) -> Iterator[Path]:
    """Serve `PodResourcesLister/List` on `sock`, answering `replies[-1]` (append to change)."""
    server = grpc.server(ThreadPoolExecutor(max_workers=2))
    handler = grpc.method_handlers_generic_handler(
        "v1.PodResourcesLister",
        {
            "List": grpc.unary_unary_rpc_method_handler(
                lambda _req, _ctx: replies[-1],
                request_deserializer=lambda b: b,
                response_serializer=lambda b: b,
            )
        },
    )
    server.add_generic_rpc_handlers((handler,))
    server.add_insecure_port(f"unix://{sock}")
    server.start()
    try:
        yield sock
    finally:
        server.stop(grace=None)
