"""Where a simulated node's pods sit and what they do: every sharing kind, never more than a
device, and a clear error when the pods do not fit."""

from __future__ import annotations

from pathlib import Path

import pytest
from exporter_fakes import sim_node
from hypothesis import given, settings
from hypothesis import strategies as st

from exporter.sim.backend import SimNode, make_pods, sim_gpus, sim_specs

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


def test_too_many_pods_is_an_error(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="no free device"):
        sim_node(tmp_path, gpus=1, mig=0, pods=9)
