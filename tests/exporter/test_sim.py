"""The simulated node: deterministic, faithful to time-slicing, and its ground truth is right."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from exporter_fakes import Clock
from hypothesis import given, settings
from hypothesis import strategies as st

from exporter.node.cgroup import parse_cgroup
from exporter.sim.backend import SimNode, build_sim_backend, make_pods, sim_gpus, sim_specs
from exporter.sim.fixtures import CGROUP_STYLES, cgroup_text
from exporter.sim.workloads import Shape, WorkloadError, load_workloads, shape_state
from exporter.sources import BackendParts

T0 = 1_700_000_000.0


def _build(
    tmp: Path, seed: int = 3, gpus: int = 4, mig: int = 1, pods: int = 12
) -> tuple[BackendParts, SimNode, Clock]:
    clock = Clock(T0)
    parts, node = build_sim_backend(
        gpus=gpus,
        mig=mig,
        pods=pods,
        seed=seed,
        workloads_file=None,
        fixture_dir=tmp,
        node_name="n1",
        clock=clock,
    )
    return parts, node, clock


def _fingerprint(parts: BackendParts, node: SimNode, clock: Clock) -> object:
    sweeps = []
    for _ in range(3):
        clock.now += 60
        sweeps.append(parts.devices.read())
    return repr(  # repr: NaN (no GPM activity yet on the first sweep) equals itself
        (
            node.placed,
            [(p.uid, p.container_id) for p in node.pods],
            [(d.uuid, d.mig_uuid, dict(d.values), d.processes) for s in sweeps for d in s.devices],
            node.expected_utilization(T0, clock.now),
        )
    )


def test_same_seed_same_node(tmp_path: Path) -> None:
    a = _fingerprint(*_build(tmp_path / "a", seed=5))
    b = _fingerprint(*_build(tmp_path / "b", seed=5))
    c = _fingerprint(*_build(tmp_path / "c", seed=6))
    assert a == b
    assert a != c
    for name in ("podresources.json", "pods.json"):
        assert (tmp_path / "a" / name).read_text() == (tmp_path / "b" / name).read_text()


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


SIM_NODES: dict[int, SimNode] = {}


def test_layout_uses_every_sharing_kind(tmp_path: Path) -> None:
    _, node, _ = _build(tmp_path, pods=16)
    kinds = {p.resource_name for p in node.placed}
    assert kinds == {"nvidia.com/gpu", "nvidia.com/mig-1g.10gb"}
    replicas = [p for p in node.placed if p.replica is not None]
    assert len({p.gpu for p in replicas}) >= 1 and len(replicas) >= 2
    assert all(p.device_id.endswith(f"::{p.replica}") for p in replicas)


def test_exporter_reads_match_ground_truth(tmp_path: Path) -> None:
    parts, node, clock = _build(tmp_path, pods=16)
    pid_to_device = {p.pid: (node.pods[p.pod].spec, p.device_id) for p in node.placed}
    clock.now += 30
    parts.devices.read()  # MIG activity (GPM) needs a first sample to difference against
    for _ in range(5):
        start = clock.now
        clock.now += 30
        sweep = parts.devices.read()
        truth = node.expected_by_device(start, clock.now)
        seen = 0
        for dev in sweep.devices:
            for proc in dev.processes:
                spec, device_id = pid_to_device[proc.pid]
                assert proc.sm_util == pytest.approx(  # NVML's integer percent
                    truth[(spec.namespace, spec.pod, device_id)], abs=0.011
                )
                seen += 1
        assert seen > 0
        # Time-sliced devices: the pods' sum never exceeds the device's own utilization.
        for dev in sweep.devices:
            if dev.mig is None and "DCGM_FI_PROF_GR_ENGINE_ACTIVE" in dev.values and dev.processes:
                total = sum(p.sm_util for p in dev.processes)
                assert total <= dev.values["DCGM_FI_PROF_GR_ENGINE_ACTIVE"] + 0.011 * len(
                    dev.processes
                )


def test_allocated_pods_without_processes(tmp_path: Path) -> None:
    parts, node, clock = _build(tmp_path, pods=16)
    clock.now += 60
    sweep = parts.devices.read()
    running = {p.pid for d in sweep.devices for p in d.processes}
    assert parts.podresources_file is not None
    allocated = {
        (a["namespace"], a["pod"]) for a in json.loads(parts.podresources_file.read_text())
    }
    idle_holders = {
        (node.pods[p.pod].spec.namespace, node.pods[p.pod].spec.pod)
        for p in node.placed
        if p.pid not in running
    }
    assert idle_holders, "some pods must hold a GPU with no process"
    assert idle_holders <= allocated
    dataload = [p for p in node.pods if p.spec.shape is Shape.DATALOADING]
    assert dataload and all((p.spec.namespace, p.spec.pod) in idle_holders for p in dataload)
    truth = node.expected_utilization(T0, clock.now)
    assert all(truth[(p.spec.namespace, p.spec.pod)] == 0.0 for p in dataload)


def test_fixtures_attribute_every_pid_to_its_pod(tmp_path: Path) -> None:
    parts, node, _ = _build(tmp_path, pods=16)
    assert parts.pods_file is not None
    uid_to_pod = {
        r["uid"]: (r["namespace"], r["name"]) for r in json.loads(parts.pods_file.read_text())
    }
    for p in node.placed:
        ref = parse_cgroup((parts.proc_root / str(p.pid) / "cgroup").read_text())
        pod = node.pods[p.pod]
        assert ref is not None and ref.pod_uid == pod.uid and ref.container_id == pod.container_id
        assert uid_to_pod[ref.pod_uid] == (pod.spec.namespace, pod.spec.pod)


@pytest.mark.parametrize("style", range(CGROUP_STYLES))
def test_every_cgroup_style_parses(style: int) -> None:
    uid, cid = "0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0", "ab" * 32
    ref = parse_cgroup(cgroup_text(uid, cid, style))
    assert ref is not None and (ref.pod_uid, ref.container_id) == (uid, cid)


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


def test_too_many_pods_is_an_error(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="no free device"):
        _build(tmp_path, gpus=1, mig=0, pods=9)
