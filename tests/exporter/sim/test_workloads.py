"""Workload shapes (pure, bounded, realistic means) and the workloads file."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from exporter_fakes import Clock

from exporter.sim.backend import build_sim_backend
from exporter.sim.workloads import Shape, WorkloadError, load_workloads, shape_state, unit

T0 = 1_700_000_000.0


@pytest.mark.parametrize("shape", list(Shape), ids=[s.value for s in Shape])
def test_shapes_are_pure_and_bounded(shape: Shape) -> None:
    ts = [T0 + k * 37.0 for k in range(2000)]
    first = [shape_state(shape, t, 11) for t in ts]
    assert first == [shape_state(shape, t, 11) for t in ts]
    assert all(0.0 <= s.demand <= 1.0 for s in first)
    assert all(s.has_process or (s.demand == 0.0 and s.memory_bytes == 0) for s in first)


@pytest.mark.parametrize(
    ("shape", "low", "high"),
    [
        (Shape.TRAINING, 0.8, 1.0),
        (Shape.DATALOADING, 0.0, 0.0),
        (Shape.NOTEBOOK, 0.0, 0.1),
        (Shape.PREPROCESSING, 0.2, 0.45),
    ],
    ids=["training-saturates", "dataloading-idle", "notebook-mostly-idle", "preprocessing-third"],
)
def test_shape_daily_means(shape: Shape, low: float, high: float) -> None:
    day = [shape_state(shape, T0 + k * 60.0, 4).demand for k in range(1440)]
    assert low <= sum(day) / len(day) <= high


def test_workloads_file_names_the_pods(tmp_path: Path) -> None:
    path = tmp_path / "w.yaml"
    path.write_text(
        "- {namespace: ml, pod: resnet-master-0, container: pytorch, shape: training, gpus: 2}\n"
        "- {namespace: ml, pod: nb-0, shape: notebook, shared: true}\n"
        "- {namespace: ml, pod: eval-0, shape: evaluation, mig: true}\n"
    )
    clock = Clock(T0)
    parts, node = build_sim_backend(
        gpus=4,
        mig=1,
        pods=0,
        seed=1,
        workloads_file=path,
        fixture_dir=tmp_path / "fx",
        node_name="n",
        clock=clock,
    )
    assert parts.podresources_file is not None
    rows = {r["pod"]: r for r in json.loads(parts.podresources_file.read_text())}
    assert (
        len(rows["resnet-master-0"]["device_ids"]) == 2
        and rows["resnet-master-0"]["container"] == "pytorch"
    )
    assert rows["nb-0"]["device_ids"][0].endswith("::0")
    assert rows["eval-0"]["resource_name"] == "nvidia.com/mig-1g.10gb"
    assert set(node.expected_utilization(T0, T0 + 60)) == {
        ("ml", "resnet-master-0"),
        ("ml", "nb-0"),
        ("ml", "eval-0"),
    }


def test_workloads_errors_are_all_reported() -> None:
    text = (
        "- {namespace: a, pod: p, shape: training}\n"
        "- {namespace: a, pod: p, shape: training}\n"
        "- {pod: q, shape: dancing, gpus: 0, colour: red}\n"
        "- {namespace: a, pod: r, shape: notebook, shared: true, mig: true}\n"
    )
    with pytest.raises(WorkloadError) as err:
        load_workloads(text)
    joined = "\n".join(err.value.errors)
    for needle in (
        "duplicate pod a/p",
        "[2].namespace",
        "[2].shape",
        "[2].gpus",
        "[2].colour",
        "[3]: a pod is either",
    ):
        assert needle in joined


def test_randomness_is_uniform_per_time_bucket_and_differs_by_seed() -> None:
    """`unit(seed, bucket)`: O(1) at any t, so each bucket must draw afresh, not the seed alone."""
    draws = [unit(7, bucket) for bucket in range(20_000)]
    assert all(0.0 <= x < 1.0 for x in draws)
    assert 0.49 < sum(draws) / len(draws) < 0.51
    assert 0.09 < sum(x < 0.1 for x in draws) / len(draws) < 0.11
    assert len(set(draws)) == len(draws)
    assert draws == [unit(7, bucket) for bucket in range(20_000)]
    assert [unit(8, bucket) for bucket in range(100)] != draws[:100]
