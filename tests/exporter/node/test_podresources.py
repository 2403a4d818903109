"""PodResources v1: the hand-written wire decoder, and `List` against a real gRPC server."""

from __future__ import annotations

import json
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import grpc
import pytest
from fake_kubelet import (
    claim_resource,
    container,
    devices,
    dynamic,
    ld,
    pod,
    response,
    s,
    serve_kubelet,
    varint,
)
from hypothesis import given
from hypothesis import strategies as st

from exporter.node.podresources import (
    AllocationsFile,
    PodResourcesClient,
    PodResourcesError,
    decode_list_response,
)
from exporter.sources import Allocation, ClaimDevice

CPU_IDS = ld(3, varint(2) + varint(3))  # packed repeated int64 cpu_ids = 3
MEMORY = ld(4, s(1, "memory") + varint(2 << 3 | 0) + varint(1 << 30))  # ContainerMemory
FIXED = varint(9 << 3 | 1) + b"\0" * 8 + varint(10 << 3 | 5) + b"\0" * 4  # unknown fixed fields

SAMPLE = response(
    [
        pod(
            "train-0",
            "team-a",
            [
                container(
                    "trainer",
                    [
                        devices("nvidia.com/gpu", ["GPU-aaaa", "GPU-bbbb"], numa=0),
                        devices("example.com/nic", ["eth1"]),
                    ],
                    CPU_IDS + MEMORY + FIXED,
                ),
                container("sidecar", []),
            ],
        ),
        pod(
            "nb",
            "team-b",
            [container("notebook", [devices("nvidia.com/gpu", ["GPU-cccc::3"])])],
        ),
        pod(
            "mig",
            "team-b",
            [container("infer", [devices("nvidia.com/mig-1g.10gb", ["MIG-dddd"])])],
        ),
        pod("cpu-only", "default", [container("app", [devices("cpu", [])])]),
    ]
)
EXPECTED = (
    Allocation("team-a", "train-0", "trainer", "nvidia.com/gpu", ("GPU-aaaa", "GPU-bbbb")),
    Allocation("team-b", "nb", "notebook", "nvidia.com/gpu", ("GPU-cccc::3",)),
    Allocation("team-b", "mig", "infer", "nvidia.com/mig-1g.10gb", ("MIG-dddd",)),
)


def test_decode_keeps_gpu_allocations_and_skips_everything_else() -> None:
    assert decode_list_response(SAMPLE) == EXPECTED


DRA_SAMPLE = response(
    [
        pod(
            "train-dra",
            "team-a",
            [
                container(
                    "trainer",
                    [],
                    dynamic(
                        "train-dra-gpu-x7k2q",
                        "team-a",
                        [
                            claim_resource("gpu.nvidia.com", "node-1", "gpu-0"),
                            claim_resource("gpu.nvidia.com", "node-1", "gpu-1"),
                        ],
                    )
                    + CPU_IDS,
                )
            ],
        ),
        pod(
            "infer",
            "team-b",
            [
                container(
                    "server",
                    [devices("nvidia.com/gpu", ["GPU-eeee"])],
                    dynamic(
                        "shared",
                        "team-b",
                        [claim_resource("gpu.nvidia.com", "node-1", "gpu-2", share_id="7f3a")],
                    )
                    # api.proto: a resource of another kind would leave device_name empty
                    + dynamic("other", "team-b", [s(2, "example.com") + s(3, "node-1")]),
                )
            ],
        ),
    ]
)


def test_decode_reads_dynamic_resources_with_their_claim_and_device() -> None:
    def dra(ns: str, pod: str, c: str, claim: str, device: str, share: str | None = None) -> Any:
        dev = ClaimDevice(ns, claim, "gpu.nvidia.com", "node-1", device, share)
        return Allocation(ns, pod, c, "gpu.nvidia.com", (), dev)

    assert decode_list_response(DRA_SAMPLE) == (
        dra("team-a", "train-dra", "trainer", "train-dra-gpu-x7k2q", "gpu-0"),
        dra("team-a", "train-dra", "trainer", "train-dra-gpu-x7k2q", "gpu-1"),
        Allocation("team-b", "infer", "server", "nvidia.com/gpu", ("GPU-eeee",)),
        dra("team-b", "infer", "server", "shared", "gpu-2", "7f3a"),
    )


def test_decode_empty_response() -> None:
    assert decode_list_response(b"") == ()


@pytest.mark.parametrize(
    "data",
    [
        pytest.param(SAMPLE[:-3], id="truncated"),
        pytest.param(varint(1 << 3 | 3), id="group-wire-type"),
        pytest.param(b"\xff" * 11, id="endless-varint"),
        pytest.param(varint(1 << 3 | 0) + varint(5), id="message-field-as-varint"),
    ],
)
def test_decode_rejects_malformed_input(data: bytes) -> None:
    with pytest.raises(PodResourcesError):
        decode_list_response(data)


names = st.text(st.characters(codec="utf-8", exclude_categories=("Cs",)), max_size=12)
allocation = st.builds(
    Allocation,
    namespace=names,
    pod=names,
    container=names,
    resource_name=st.sampled_from(["nvidia.com/gpu", "nvidia.com/mig-2g.20gb"]),
    device_ids=st.lists(names, min_size=1, max_size=3).map(tuple),
)


@given(st.lists(allocation, max_size=6))
def test_decode_round_trips_any_allocation_list(allocs: list[Allocation]) -> None:
    pods = [
        pod(
            a.pod,
            a.namespace,
            [container(a.container, [devices(a.resource_name, [*a.device_ids])])],
        )
        for a in allocs
    ]
    assert decode_list_response(response(pods)) == tuple(allocs)


@pytest.fixture
def kubelet(tmp_path: Path) -> Iterator[tuple[Path, list[bytes]]]:
    replies = [SAMPLE]
    with serve_kubelet(tmp_path / "kubelet.sock", replies) as sock:
        yield sock, replies


def test_list_over_a_real_grpc_unix_socket(kubelet: tuple[Path, list[bytes]]) -> None:
    sock, replies = kubelet
    client = PodResourcesClient(sock, timeout=60)  # a give-up for a hang, not a bound on speed
    try:
        assert client.list() == EXPECTED
        replies.append(DRA_SAMPLE)  # a kubelet of 1.34+ sends dynamic_resources by default
        assert [a.claim.device for a in client.list() if a.claim is not None] == [
            "gpu-0",
            "gpu-1",
            "gpu-2",
        ]
        replies.append(response([]))  # the pods are gone: the next List says so
        assert client.list() == ()
    finally:
        client.close()


def test_missing_socket_is_an_error_not_a_crash(tmp_path: Path) -> None:
    with pytest.raises(PodResourcesError, match="does not exist"):
        PodResourcesClient(tmp_path / "nope.sock").list()


def test_a_server_without_the_service_is_an_error(tmp_path: Path) -> None:
    sock = tmp_path / "other.sock"
    server = grpc.server(ThreadPoolExecutor(max_workers=1))
    server.add_insecure_port(f"unix://{sock}")
    server.start()
    client = PodResourcesClient(sock, timeout=60)  # a give-up for a hang, not a bound on speed
    try:
        with pytest.raises(PodResourcesError, match="List failed"):
            client.list()
    finally:
        client.close()
        server.stop(grace=None)


def test_allocations_file_reads_fixtures_and_follows_changes(tmp_path: Path) -> None:
    path = tmp_path / "podresources.json"
    rows = [
        {
            "namespace": "ns",
            "pod": "p",
            "container": "c",
            "resource_name": "nvidia.com/gpu",
            "device_ids": ["GPU-1"],
        }
    ]
    path.write_text(json.dumps(rows))
    source = AllocationsFile(path)
    assert source.list() == (Allocation("ns", "p", "c", "nvidia.com/gpu", ("GPU-1",)),)
    path.write_text("[]")
    assert source.list() == ()
    path.write_text("{not json")
    with pytest.raises(PodResourcesError):
        source.list()


def test_allocations_file_reads_dra_devices(tmp_path: Path) -> None:
    path = tmp_path / "podresources.json"
    claim = {
        "claim_namespace": "ns",
        "claim_name": "p-gpu",
        "driver": "gpu.nvidia.com",
        "pool": "n1",
        "device": "gpu-3",
    }
    row = {"namespace": "ns", "pod": "p", "container": "c", "device_ids": [], "claim": claim}
    path.write_text(json.dumps([{**row, "resource_name": "gpu.nvidia.com"}]))
    device = ClaimDevice("ns", "p-gpu", "gpu.nvidia.com", "n1", "gpu-3")
    assert AllocationsFile(path).list() == (
        Allocation("ns", "p", "c", "gpu.nvidia.com", (), device),
    )
