"""Where a simulated node's pods sit and what they do: every sharing kind, never more than a
device, and any number of pods fits by sharing devices evenly."""

from __future__ import annotations

from pathlib import Path

import pytest
from exporter_fakes import sim_node
from hypothesis import given, settings
from hypothesis import strategies as st

from exporter.sim.backend import SimNode, make_pods, sim_gpus, sim_specs
from exporter.sim.layout import REPLICAS, sharers

T0 = 1_700_000_000.0
SIM_NODES: dict[int, SimNode] = {}  # by seed: built once, the layout and shapes are pure


@settings(max_examples=60, deadline=None)
@given(t=st.floats(min_value=T0, max_value=T0 + 7 * 86400), seed=st.integers(0, 50))
def test_time_sliced_pods_never_exceed_their_device(t: float, seed: int) -> None:
    if seed not in SIM_NODES:  # no fixtures needed: the layout and the shapes are pure
        specs = sim_specs(4, 1, 16, None)
        SIM_NODES[seed] = SimNode(sim_gpus(4, 1, seed), make_pods(specs, seed), seed=seed)
    node = SIM_NODES[seed]
    used: dict[tuple[int, int | None], float] = {}
    for p, a in zip(node.placed, node.activity_at(t), strict=True):
        used[p.group] = used.get(p.group, 0.0) + a.sm
        assert 0.0 <= a.sm <= 1.0
    assert max(used.values()) <= 1.0 + 1e-9


def test_layout_uses_every_sharing_kind(tmp_path: Path) -> None:
    _, node, _ = sim_node(tmp_path, pods=16)
    kinds = {p.resource_name for p in node.placed}
    assert kinds == {"nvidia.com/gpu", "nvidia.com/mig-1g.10gb"}
    replicas = [p for p in node.placed if p.replica is not None]
    assert len({p.gpu for p in replicas}) >= 1 and len(replicas) >= 2
    assert all(p.device_id.endswith(f"::{p.replica}") for p in replicas)


@pytest.mark.parametrize(
    ("gpus", "mig", "pods", "most"),
    [
        pytest.param(1, 0, 40, 40, id="one-gpu-40-pods"),
        pytest.param(8, 8, 256, 5, id="all-mig-256-pods"),
        pytest.param(8, 4, 256, 8, id="half-mig-256-pods"),
        pytest.param(8, 0, 256, 32, id="no-mig-256-pods"),
    ],
)
def test_any_number_of_pods_fits_by_sharing_devices_evenly(
    gpus: int, mig: int, pods: int, most: int
) -> None:
    specs = sim_specs(gpus, mig, pods, None)
    node = SimNode(sim_gpus(gpus, mig, 0), make_pods(specs, 0), seed=0)
    assert len({p.pod for p in node.placed}) == pods
    per_device = sharers(node.placed)
    assert max(per_device.values()) - min(per_device.values()) <= 1  # as even as can be
    assert max(per_device.values()) == most
    shared = [p for p in node.placed if p.replica is not None]
    assert all(p.device_id.endswith(f"::{p.replica}") for p in shared)
    assert len({p.device_id for p in node.placed}) == len(node.placed)  # one id per process
    mig_ids = [p for p in node.placed if p.mig_slot is not None]
    assert all(p.device_id.startswith("MIG-") for p in mig_ids)
    assert len(mig_ids) == (pods if mig == gpus else len(mig_ids))


def test_pods_that_fit_keep_one_device_each_kind() -> None:
    """The dense layout only starts where the one-device-per-request layout stops."""
    specs = sim_specs(4, 1, 12, None)
    node = SimNode(sim_gpus(4, 1, 0), make_pods(specs, 0), seed=0)
    mig = [p for p in node.placed if p.mig_slot is not None]
    assert mig and all(p.replica is None for p in mig)
    assert max(sharers(node.placed).values()) <= REPLICAS
