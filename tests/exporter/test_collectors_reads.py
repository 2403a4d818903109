"""`--collectors` trims what is read, not only what is served: NVML calls no chosen family needs
are not made (counted by the emulator, `SimNvml.calls`), and the per-pod families stay."""

from __future__ import annotations

from pathlib import Path

import pytest
from exporter_fakes import Clock, EmulatedNode, busy_gpus, sim_node
from prometheus_client.parser import text_string_to_metric_families

import gpu_contract as gc
from exporter.cycle import AttributionSources, CollectLoop
from exporter.node.podresources import AllocationsFile
from exporter.node.pods import PodsFile
from exporter.nvml.nvlink import NVLINK_TOTAL
from exporter.nvml.readings import READINGS
from exporter.sim.backend import SimNode

# A minimal counters file's choice: no PCIe, NVLink, remapped rows, clocks, energy, ECC-like extras.
CHOSEN = frozenset({"DCGM_FI_DEV_GPU_UTIL", "DCGM_FI_DEV_FB_USED", "DCGM_FI_DEV_POWER_USAGE"})
LEFT_OUT_CALLS = (
    "nvmlDeviceGetPcieThroughput",
    "nvmlDeviceGetPcieReplayCounter",
    "nvmlDeviceGetRemappedRows",
    "nvmlDeviceGetFieldValues",  # memory temperature and NVLink counters
    "nvmlDeviceGetClockInfo",
    "nvmlDeviceGetTotalEnergyConsumption",
    "nvmlDeviceGetTemperature",  # the sim driver (R550) predates nvmlDeviceGetTemperatureV
    "nvmlDeviceGetEncoderUtilization",
    "nvmlDeviceGetDecoderUtilization",
)
ATTRIBUTION_CALLS = (
    "nvmlDeviceGetMemoryInfo",
    "nvmlDeviceGetUtilizationRates",
    "nvmlDeviceGetProcessUtilization",
    "nvmlDeviceGetComputeRunningProcesses",
    "nvmlDeviceGetMigDeviceHandleByIndex",
    "nvmlGpmMigSampleGet",
    "nvmlDeviceGetPowerUsage",  # chosen
)


def sim_loop(tmp_path: Path, families: frozenset[str] | None) -> tuple[CollectLoop, SimNode, Clock]:
    parts, node, clock = sim_node(tmp_path, gpus=4, mig=1, pods=12)
    assert parts.podresources_file is not None and parts.pods_file is not None
    sources = AttributionSources(
        AllocationsFile(parts.podresources_file), PodsFile(parts.pods_file), parts.proc_root
    )
    loop = CollectLoop(parts.devices, sources, hostname="n1", clock=clock, families=families)
    return loop, node, clock


def served(loop: CollectLoop, node: SimNode, clock: Clock) -> tuple[dict[str, int], set[str]]:
    """Two cycles (GPM and NVLink need a previous sample): the calls made, the families served."""
    loop.collect_once()
    clock.now += 1.0
    body = loop.collect_once().exposition.body.decode()
    return dict(node.lib.calls), {f.name for f in text_string_to_metric_families(body)}


def test_a_trimmed_collectors_file_skips_the_calls_no_chosen_family_needs(tmp_path: Path) -> None:
    calls, names = served(*sim_loop(tmp_path, CHOSEN))
    assert {call: calls.get(call, 0) for call in LEFT_OUT_CALLS} == dict.fromkeys(LEFT_OUT_CALLS, 0)
    assert [c for c in ATTRIBUTION_CALLS if not calls.get(c)] == []
    assert {n for n in names if n.startswith("DCGM_FI_")} == CHOSEN
    assert {m.name for m in gc.POD_METRICS} <= names


def test_the_default_makes_every_call(tmp_path: Path) -> None:
    calls, names = served(*sim_loop(tmp_path, None))
    assert [c for c in LEFT_OUT_CALLS + ATTRIBUTION_CALLS if not calls.get(c)] == []
    assert {m.name for m in gc.DEVICE_METRICS} <= names


def test_per_pod_values_do_not_depend_on_the_collectors_file(tmp_path: Path) -> None:
    pods = []
    for families, sub in ((None, "all"), (CHOSEN, "few")):
        loop, _node, clock = sim_loop(tmp_path / sub, families)
        loop.collect_once()
        clock.now += 1.0
        pods.append(
            [
                (
                    p.ref,
                    p.device.uuid,
                    p.device.mig_uuid,
                    p.utilization,
                    p.memory_bytes,
                    p.processes,
                )
                for p in loop.collect_once().snapshot.pods
            ]
        )
    assert pods[0] and pods[0] == pods[1]


ONE_FAMILY = sorted({f for r in READINGS for f in r.families} | {NVLINK_TOTAL})


@pytest.mark.parametrize("family", ONE_FAMILY)
def test_a_family_chosen_alone_is_still_read(family: str) -> None:
    """Each reading names every family it yields: choosing one alone still reads it."""
    node = EmulatedNode(busy_gpus(1))
    node.source.watch(frozenset({family}))
    node.sweep()
    values = node.sweep().devices[0].values
    assert family in values, sorted(values)


def collectors_reporting(loop: CollectLoop, clock: Clock) -> set[str]:
    loop.collect_once()
    clock.now += 1.0
    body = loop.collect_once().exposition.body.decode()
    (success,) = [
        f
        for f in text_string_to_metric_families(body)
        if f.name == "gpu_exporter_collector_success"
    ]
    return {s.labels["collector"] for s in success.samples}


def test_a_collector_that_reads_nothing_reports_no_success(tmp_path: Path) -> None:
    """Not read is not succeeded: a trimmed-away collector's series is absent, never 1."""
    loop, _node, clock = sim_loop(tmp_path / "few", CHOSEN)
    trimmed = collectors_reporting(loop, clock)
    loop, _node, clock = sim_loop(tmp_path / "all", None)
    everything = collectors_reporting(loop, clock)
    assert {"pcie", "row_remap", "nvlink", "clocks"} <= everything - trimmed
    assert {"identity", "memory", "utilization", "power", "processes", "mig", "cycle"} <= trimmed
