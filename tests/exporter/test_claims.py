"""`claims.resolve`: DRA allocations named by the UUID their ResourceSlice gives. Pure."""

from __future__ import annotations

import pytest

from exporter.claims import Resolved, resolve
from exporter.sources import Allocation, ClaimDevice, DeviceUuids

NVIDIA = "gpu.nvidia.com"
GPU0 = "GPU-00000000-0000-0000-0000-000000000000"
MIG = "MIG-00010007-0000-0000-0000-000000000000"


def dra(pod: str, device: str, driver: str = NVIDIA, claim: str = "c") -> Allocation:
    return Allocation("ns", pod, "main", driver, (), ClaimDevice("ns", claim, driver, "n1", device))


def named(alloc: Allocation, uuid: str) -> Allocation:
    return Allocation(
        *(alloc.namespace, alloc.pod, alloc.container, alloc.resource_name), (uuid,), alloc.claim
    )


PLUGIN = Allocation("ns", "dp", "main", "nvidia.com/gpu", ("GPU-dp",))
SLICES: DeviceUuids = {
    (NVIDIA, "n1", "gpu-0"): GPU0,
    (NVIDIA, "n1", "gpu-0-mig-1g10gb-19-0"): MIG,
    ("dra.net", "n1", "nic-0"): None,
}


@pytest.mark.parametrize(
    ("allocations", "uuids", "expected"),
    [
        pytest.param([PLUGIN], None, Resolved((PLUGIN,), ()), id="device-plugin-untouched"),
        pytest.param(
            [dra("a", "gpu-0"), PLUGIN],
            SLICES,
            Resolved((named(dra("a", "gpu-0"), GPU0), PLUGIN), ()),
            id="whole-gpu-by-uuid",
        ),
        pytest.param(
            [dra("a", "gpu-0-mig-1g10gb-19-0")],
            SLICES,
            Resolved((named(dra("a", "gpu-0-mig-1g10gb-19-0"), MIG),), ()),
            id="mig-device-by-its-mig-uuid",
        ),
        pytest.param(
            [dra("a", "gpu-0", claim="shared"), dra("b", "gpu-0", claim="shared")],
            SLICES,
            Resolved(
                (
                    named(dra("a", "gpu-0", claim="shared"), GPU0),
                    named(dra("b", "gpu-0", claim="shared"), GPU0),
                ),
                (),
            ),
            id="a-shared-claim-names-the-device-for-every-pod",
        ),
        pytest.param(
            [dra("a", "nic-0", driver="dra.net")], SLICES, Resolved((), ()), id="not-a-gpu"
        ),
        pytest.param(
            [dra("a", "gpu-7"), dra("b", "gpu-7"), PLUGIN],
            SLICES,
            Resolved((PLUGIN,), ((NVIDIA, "n1", "gpu-7"),)),
            id="unpublished-device-is-unknown-once",
        ),
        pytest.param(
            [dra("a", "gpu-0")],
            None,
            Resolved((), ((NVIDIA, "n1", "gpu-0"),)),
            id="slices-never-read",
        ),
    ],
)
def test_resolve(
    allocations: list[Allocation], uuids: DeviceUuids | None, expected: Resolved
) -> None:
    assert resolve(allocations, uuids) == expected
