"""The simulated node: deterministic, read through the real NVML path, and its ground truth
is right."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from exporter_fakes import GIB, Clock, sim_node

from exporter.sim.backend import SimNode, build_sim_backend, make_pods, sim_gpus
from exporter.sim.nvml.sampling import ProcessRows
from exporter.sim.workloads import PodState, Shape, WorkloadSpec
from exporter.sources import BackendParts

T0 = 1_700_000_000.0


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
    a = _fingerprint(*sim_node(tmp_path / "a", seed=5))
    b = _fingerprint(*sim_node(tmp_path / "b", seed=5))
    c = _fingerprint(*sim_node(tmp_path / "c", seed=6))
    assert a == b
    assert a != c
    for name in ("podresources.json", "pods.json"):
        assert (tmp_path / "a" / name).read_text() == (tmp_path / "b" / name).read_text()


def test_exporter_reads_match_ground_truth(tmp_path: Path, process_rows: ProcessRows) -> None:
    """Every process within NVML's integer percent of its truth over 30 s intervals, whichever
    reading of nvml.h the driver answers with."""
    parts, node, clock = sim_node(tmp_path, pods=16, process_rows=process_rows)
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
    parts, node, clock = sim_node(tmp_path, pods=16)
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


def test_the_ground_truth_reads_the_drivers_sample_grid() -> None:
    """The truth averages each process at the middle of every sample period, where the driver
    samples it: a pod busy only in the middle half of each period is 1.0, not 0.5 or 0."""
    spec = WorkloadSpec("ns", "mid", "main", Shape.CONSTANT)
    gpus = sim_gpus(1, 0, 0)
    period = gpus[0].sample_period_s

    def busy_mid_period(t: float) -> PodState:
        return PodState(1.0 if 0.25 <= (t / period) % 1.0 < 0.75 else 0.0, True, GIB)

    node = SimNode(gpus, make_pods([spec], 0, [busy_mid_period]), seed=0)
    assert node.expected_utilization(T0, T0 + 20 * period) == {("ns", "mid"): 1.0}
    assert node.expected_utilization(T0, T0 + period / 2) == {("ns", "mid"): 0.0}  # no period


def test_time_sliced_pods_hold_at_most_their_share_of_the_gpus_memory(tmp_path: Path) -> None:
    """Four training pods on one time-sliced GPU each want 62 GiB: each gets its replica's share
    of the usable memory, and the GPU's framebuffer adds up."""
    workloads = tmp_path / "w.yaml"
    workloads.write_text(
        "".join(
            f"- {{namespace: ml, pod: t{i}, shape: training, shared: true}}\n" for i in range(4)
        )
    )
    clock = Clock(T0)
    parts, node = build_sim_backend(
        gpus=1,
        mig=0,
        pods=0,
        seed=1,
        workloads_file=workloads,
        fixture_dir=tmp_path / "fx",
        node_name="n",
        clock=clock,
    )
    gpu = node.gpus[0]
    share = (gpu.memory_total - gpu.memory_reserved) * 0.95 / 4
    held = [a.memory_bytes for a in node.activity_at(T0 + 600)]
    assert len(held) == 4 and all(share - GIB < m <= share for m in held)
    clock.now += 600
    (dev,) = parts.devices.read().devices
    used, free = dev.values["DCGM_FI_DEV_FB_USED"], dev.values["DCGM_FI_DEV_FB_FREE"]
    assert used == sum(held) // (1 << 20) and used + free <= gpu.memory_total / (1 << 20)
