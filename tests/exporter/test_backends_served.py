"""Every backend through the serving half: sim ground truth per pod, promtool on each output."""

from __future__ import annotations

from pathlib import Path

import pytest
from exporter_fakes import Clock, promtool_problems

from exporter.cycle import AttributionSources, CollectLoop
from exporter.node.podresources import AllocationsFile, PodResourcesClient
from exporter.node.pods import PodsFile
from exporter.nvml.source import build_nvml_backend
from exporter.sim.backend import SimNode, build_sim_backend, sim_gpus
from exporter.sim.nvml.library import SimNvml
from exporter.sim.nvml.sampling import ProcessRows
from exporter.sim.replay import build_replay_backend
from exporter.sources import BackendParts

T0 = 1_700_000_000.0


def fixture_loop(parts: BackendParts, clock: Clock) -> CollectLoop:
    assert parts.podresources_file is not None and parts.pods_file is not None
    sources = AttributionSources(
        AllocationsFile(parts.podresources_file), PodsFile(parts.pods_file), parts.proc_root
    )
    return CollectLoop(parts.devices, sources, hostname="sim-node", clock=clock)


@pytest.fixture
def sim(tmp_path: Path, process_rows: ProcessRows) -> tuple[CollectLoop, SimNode, Clock]:
    """The default mix on four GPUs (one MIG), its emulated driver answering as `process_rows`."""
    clock = Clock(T0)
    parts, node = build_sim_backend(
        gpus=4,
        mig=1,
        pods=16,
        seed=7,
        workloads_file=None,
        fixture_dir=tmp_path,
        node_name="sim-node",
        clock=clock,
        process_rows=process_rows,
    )
    return fixture_loop(parts, clock), node, clock


def device_key(usage_device_uuid: str, mig_uuid: str | None) -> str:
    return mig_uuid or usage_device_uuid


def test_per_pod_utilization_matches_the_sim_ground_truth(
    sim: tuple[CollectLoop, SimNode, Clock],
) -> None:
    loop, node, clock = sim
    loop.collect_once()
    checked_shared = 0
    idle_holders = 0
    for _ in range(8):
        start = clock.now
        clock.now += 1.0
        snapshot = loop.collect_once().snapshot
        truth = {
            (ns, pod, dev.split("::")[0]): (value, "::" in dev)
            for (ns, pod, dev), value in node.expected_by_device(start, clock.now).items()
        }
        got = {
            (u.ref.namespace, u.ref.pod, device_key(u.device.uuid, u.device.mig_uuid)): u
            for u in snapshot.pods
        }
        assert set(got) == set(truth)  # every allocated pod appears, idle or not
        for key, (expected, shared) in truth.items():
            usage = got[key]
            assert usage.allocated
            assert abs(usage.utilization - expected) <= 0.02, (key, usage.utilization, expected)
            checked_shared += shared
            if expected == 0.0 and usage.processes == 0:
                assert usage.utilization == 0.0
                idle_holders += 1
    assert checked_shared >= 8 * 2  # at least two time-sliced pods per cycle were compared
    assert idle_holders >= 8  # allocated-but-idle pods were present, at 0


def test_time_sliced_pods_never_exceed_their_gpu(sim: tuple[CollectLoop, SimNode, Clock]) -> None:
    loop, _, clock = sim
    loop.collect_once()
    clock.now += 1.0
    snapshot = loop.collect_once().snapshot
    for device in snapshot.devices:
        if device.mig is None and "DCGM_FI_DEV_GPU_UTIL" in device.values:
            total = sum(u.utilization for u in snapshot.pods if u.device is device)
            assert total <= device.values["DCGM_FI_DEV_GPU_UTIL"] / 100 + 1e-9


BUSY_AND_HALVES = """
- {namespace: ml, pod: busy, shape: constant, demand: 1.0}
- {namespace: ml, pod: half-a, shape: constant, demand: 0.45, shared: true}
- {namespace: ml, pod: half-b, shape: constant, demand: 0.45, shared: true}
"""


def test_a_pod_at_100_and_two_pods_at_45_read_as_such_over_15_s_intervals(
    tmp_path: Path, process_rows: ProcessRows
) -> None:
    """The issue's reproduction, through the NVML source on the emulator answering as real
    NVML does: before, 0.067 and 0.017 (one sample per process read as one period's worth)."""
    (tmp_path / "w.yaml").write_text(BUSY_AND_HALVES)
    clock = Clock(T0)
    parts, _ = build_sim_backend(
        gpus=2,
        mig=0,
        pods=0,
        seed=5,
        workloads_file=tmp_path / "w.yaml",
        fixture_dir=tmp_path / "fx",
        node_name="sim-node",
        clock=clock,
        process_rows=process_rows,
    )
    loop = fixture_loop(parts, clock)
    loop.collect_once()
    for _ in range(4):
        clock.now += 15.0
        snapshot = loop.collect_once().snapshot
        got = {u.ref.pod: (u.utilization, u.device.index) for u in snapshot.pods}
        assert got["busy"][0] >= 0.85
        assert got["half-a"][0] == pytest.approx(0.45, abs=0.02)
        assert got["half-b"][0] == pytest.approx(0.45, abs=0.02)
        assert got["half-a"][1] == got["half-b"][1] != got["busy"][1]  # one GPU, time-sliced
        text = loop.published.exposition.body.decode() if loop.published else ""
        assert 'gpu_pod_utilization_ratio{namespace="ml",pod="busy"' in text


@pytest.mark.prometheus
def test_promtool_on_the_sim_backend(sim: tuple[CollectLoop, SimNode, Clock]) -> None:
    loop, _, clock = sim
    loop.collect_once()
    clock.now += 1.0
    text = loop.collect_once().exposition.body.decode()
    assert "gpu_pod_utilization_ratio{" in text and 'GPU_I_PROFILE="' in text
    assert promtool_problems(text) == []


@pytest.mark.prometheus
def test_promtool_on_the_nvml_backend_through_the_emulator_without_a_kubelet(
    tmp_path: Path,
) -> None:
    clock = Clock(T0)
    parts = build_nvml_backend(proc_root=tmp_path, lib=SimNvml(sim_gpus(3, 1, 1), clock=clock))
    sources = AttributionSources(PodResourcesClient(tmp_path / "kubelet.sock"), None, tmp_path)
    loop = CollectLoop(parts.devices, sources, hostname="gpu-node", clock=clock)
    loop.collect_once()
    clock.now += 1.0
    text = loop.collect_once().exposition.body.decode()
    parts.devices.close()
    assert 'gpu_exporter_collector_success{collector="podresources"} 0' in text
    assert "DCGM_FI_DEV_GPU_UTIL{" in text and "gpu_pod_" not in text
    assert promtool_problems(text) == []


@pytest.mark.prometheus
def test_promtool_on_the_replay_backend(shared_data: Path, tmp_path: Path) -> None:
    clock = Clock(T0)
    parts, _ = build_replay_backend(
        file=shared_data / "alibaba-gentd26" / "pod_gpu_duty_cycle.csv.gz",
        speed=60.0,
        seed=3,
        fixture_dir=tmp_path,
        node_name="replay-node",
        clock=clock,
        pods=4,
    )
    loop = fixture_loop(parts, clock)
    loop.collect_once()
    clock.now += 1.0
    text = loop.collect_once().exposition.body.decode()
    assert text.count("gpu_pod_allocated{") == 4
    assert promtool_problems(text) == []
