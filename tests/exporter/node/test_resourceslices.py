"""The node's ResourceSlices: the pure parse, and listing them from a fake API server that
serves the real `resource.k8s.io` schema and field selectors (`fake_slices`)."""

from __future__ import annotations

import threading
from typing import Any

import pytest
from fake_pods_api import FakePodsApi, serve
from fake_slices import gpu_device, mig_device, slice_json

from exporter.node.apiserver import ApiEndpoint
from exporter.node.resourceslices import KubernetesResourceSlices, parse_slice_pages
from exporter.sources import DeviceKey

GPU0 = "GPU-00000000-0000-0000-0000-000000000000"
GPU1 = "GPU-00000001-0000-0000-0000-000000000000"
MIG = "MIG-00010001-0000-0000-0000-000000000000"
NVIDIA = "gpu.nvidia.com"


def page(*items: Any) -> dict[str, Any]:
    return {"kind": "ResourceSliceList", "metadata": {}, "items": list(items)}


def nic(name: str) -> Any:
    return {"name": name, "attributes": {"ifName": {"string": "eth1"}}}


@pytest.mark.parametrize(
    ("items", "expected"),
    [
        pytest.param(
            [slice_json("n1", [gpu_device(0, GPU0), gpu_device(1, GPU1)])],
            {(NVIDIA, "n1", "gpu-0"): GPU0, (NVIDIA, "n1", "gpu-1"): GPU1},
            id="whole-gpus",
        ),
        pytest.param(
            [slice_json("n1", [mig_device("gpu-1-mig-1g10gb-9-0", MIG, GPU1, "1g.10gb")])],
            {(NVIDIA, "n1", "gpu-1-mig-1g10gb-9-0"): MIG},
            id="mig-device-by-its-own-uuid",
        ),
        pytest.param(
            [slice_json("n1", [nic("nic-0")], driver="dra.net")],
            {("dra.net", "n1", "nic-0"): None},
            id="a-device-without-uuid-is-known-but-not-a-gpu",
        ),
        pytest.param(
            [
                slice_json("n1", [{"name": "gpu-0", "basic": gpu_device(0, GPU0)}]),
                slice_json(
                    "n1",
                    [{"name": "gpu-1", "attributes": {f"{NVIDIA}/uuid": {"string": GPU1}}}],
                    pool="p2",
                ),
            ],
            {(NVIDIA, "n1", "gpu-0"): GPU0, (NVIDIA, "p2", "gpu-1"): GPU1},
            id="v1beta1-basic-and-a-domain-qualified-name",
        ),
        pytest.param(
            [
                slice_json("n1", [gpu_device(0, GPU1)], generation=1),
                slice_json("n1", [gpu_device(0, GPU0)], generation=2),
                slice_json("n1", [gpu_device(1, GPU1)], generation=1),
            ],
            {(NVIDIA, "n1", "gpu-0"): GPU0},
            id="only-the-newest-generation-of-a-pool",
        ),
    ],
)
def test_parse_maps_each_device_to_its_uuid(items: list[Any], expected: dict[Any, Any]) -> None:
    assert dict(parse_slice_pages([page(*items)])) == expected


def test_parse_rejects_a_page_that_is_not_a_list() -> None:
    with pytest.raises(ValueError, match="not a ResourceSliceList"):
        parse_slice_pages([{"items": {"spec": {}}}])


def node_slices() -> list[Any]:
    """Two nodes' GPUs and a NIC driver's slice on the first."""
    return [
        slice_json("n1", [gpu_device(0, GPU0)]),
        slice_json("n2", [gpu_device(0, GPU1)]),
        slice_json("n1", [nic("nic-0")], driver="dra.net"),
    ]


@pytest.mark.parametrize("versions", [("v1", "v1beta1"), ("v1beta2",), ("v1beta1",)])
def test_lists_the_nodes_slices_by_field_selector_in_the_newest_version_served(
    versions: tuple[str, ...],
) -> None:
    api = FakePodsApi(slices=node_slices(), slice_versions=versions)
    with serve(api) as url:
        slices = KubernetesResourceSlices("n1", ApiEndpoint(url), start=False, page_limit=1)
        slices.refresh()
        slices.refresh()  # again: straight to the version that answered
        lookup = slices.lookup()
        slices.close()
    assert lookup.ok and lookup.new_errors == 0
    assert dict(lookup.uuids or {}) == {
        (NVIDIA, "n1", "gpu-0"): GPU0,
        ("dra.net", "n1", "nic-0"): None,
    }
    served = [s for s in api.seen if s.path.rsplit("/", 2)[-2] == versions[0]]
    assert {s.query["fieldSelector"][0] for s in api.seen} == {"spec.nodeName=n1"}
    assert [s.query.get("continue") for s in served] == [None, ["1"], None, ["1"]]
    missed = [s.path for s in api.seen if s not in served]
    skipped = ("v1", "v1beta2", "v1beta1")[: ("v1", "v1beta2", "v1beta1").index(versions[0])]
    assert missed == [f"/apis/resource.k8s.io/{v}/resourceslices" for v in skipped]


def test_a_failing_list_is_counted_and_the_last_good_index_kept() -> None:
    api = FakePodsApi(slices=node_slices())
    with serve(api) as url:
        slices = KubernetesResourceSlices("n1", ApiEndpoint(url), start=False)
        slices.refresh()
        api.status = 403
        slices.refresh()
        lookup = slices.lookup()
        slices.close()
    assert not lookup.ok and lookup.new_errors == 1
    assert lookup.uuids is not None and lookup.uuids[(NVIDIA, "n1", "gpu-0")] == GPU0


def test_a_node_without_dra_never_lists_slices() -> None:
    api = FakePodsApi(slices=node_slices())
    with serve(api) as url:
        slices = KubernetesResourceSlices("n1", ApiEndpoint(url))
        slices.close()
    assert api.seen == []


def test_an_unknown_device_asks_for_a_list_at_once() -> None:
    api = FakePodsApi(slices=node_slices())
    listed = threading.Event()
    key: DeviceKey = (NVIDIA, "n1", "gpu-0")
    with serve(api) as url:
        slices = KubernetesResourceSlices("n1", ApiEndpoint(url), refresh_seconds=3600)
        original = slices.refresh

        def refresh() -> None:
            original()
            listed.set()

        slices.refresh = refresh  # type: ignore[method-assign]
        slices.want([key])
        assert listed.wait(60)  # a give-up for a hang, not a bound on speed
        uuids = slices.lookup().uuids
        slices.close()
    assert uuids is not None and uuids[key] == GPU0
